//! `kimi-rs web` under a client that stops reading, over real sockets: the session streams a
//! long answer to a client that reads everything and to one that reads nothing (a tiny receive
//! buffer, so the kernel holds little for it). The reading client gets every frame in order
//! while the other is stalled; the stalled one, once it reads again, gets a gap-free prefix,
//! then a `resync_required` naming the last seq it was sent, then a close frame (code 1008) —
//! and resubscribing from that cursor brings the rest of the turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::web_client::{Incoming, Seen, WebServer, connect, next, subscribe};
use common::{CORE_FORMATS, Fixture};
use kimi_llm::FinishReason;
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use std::time::Duration;

/// Deltas of the streamed answer and the size of each: far more than the server queues for one
/// connection (1,024 frames) plus the session's ring (4,096) plus what the kernel buffers.
const DELTAS: usize = 12_000;
const DELTA_CHARS: usize = 200;
const WAIT: Duration = Duration::from_secs(60);

fn long_answer() -> (ScriptTurn, String) {
    let mut events = Vec::new();
    let mut full = String::new();
    for i in 0..DELTAS {
        let text = format!("{i:0>DELTA_CHARS$}");
        full.push_str(&text);
        events.push(ScriptEvent::text(text));
        // Paced like a fast model (~4,000 deltas a second at most), not a burst.
        if i % 4 == 3 {
            events.push(ScriptEvent::Delay { ms: 1 });
        }
    }
    events.push(ScriptEvent::usage(10, 5));
    events.push(ScriptEvent::finish(FinishReason::Stop));
    (ScriptTurn::reply(events), full)
}

#[test]
fn a_client_that_stops_reading_is_cut_off_clearly_without_stalling_the_others() {
    let (turn, full) = long_answer();
    let fx = Fixture::new(CORE_FORMATS[0], vec![turn]);
    let server = WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let session = server.create_session(&fx.cwd());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut slow = connect(server.port, &server.token, Some(4096)).await;
        let sub = subscribe(&mut slow, &session, None).await;
        let epoch = sub["subscriptions"][0]["epoch"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut fast = connect(server.port, &server.token, None).await;
        subscribe(&mut fast, &session, None).await;
        server.prompt(&session, "write a long answer");

        // The reading client gets the whole turn, in order, while the other reads nothing.
        let mut seen = Seen::default();
        while !seen.turn_ended {
            match next(&mut fast, WAIT).await {
                Some(Incoming::Frame(frame)) => seen.add(&frame),
                other => panic!(
                    "the reading client lost its stream: {other:?} after {} frames, seqs {:?}",
                    seen.frames, seen.seqs
                ),
            }
        }
        assert_eq!(seen.out_of_order, None);
        assert_eq!(
            seen.text.len(),
            full.len(),
            "every delta reached the reading client"
        );
        assert!(seen.text == full, "in order");

        // The stalled client now reads: a gap-free prefix, the notice, the close.
        let mut stalled = Seen::default();
        let notice = loop {
            match next(&mut slow, WAIT).await {
                Some(Incoming::Frame(frame)) if frame["type"] == "resync_required" => break frame,
                Some(Incoming::Frame(frame)) => stalled.add(&frame),
                other => panic!(
                    "no resync notice before {other:?}; saw {} frames",
                    stalled.frames
                ),
            }
        };
        assert_eq!(stalled.out_of_order, None);
        assert!(
            full.starts_with(&stalled.text),
            "what the stalled client got is a prefix of the answer"
        );
        assert!(
            stalled.text.len() < full.len(),
            "it was cut off before the end"
        );
        let reason = notice["payload"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("too slowly") || reason.contains("fell"),
            "{notice}"
        );
        let last_seq = notice["payload"]["last_seq"].as_u64().unwrap();
        if let Some(last) = stalled.seqs.last() {
            assert_eq!(*last, last_seq, "the notice names the last seq delivered");
        }
        match next(&mut slow, WAIT).await {
            Some(Incoming::Closed(Some(close))) => {
                assert_eq!(u16::from(close.code), 1008, "{close:?}");
                assert!(close.reason.contains("too slow"), "{close:?}");
            }
            other => panic!("no close frame after the notice: {other:?}"),
        }

        // Resubscribing from the cursor brings the rest of the turn's durable frames.
        let mut again = connect(server.port, &server.token, None).await;
        subscribe(&mut again, &session, Some((last_seq, &epoch))).await;
        let mut rest = Seen::default();
        while !rest.turn_ended {
            match next(&mut again, WAIT).await {
                Some(Incoming::Frame(frame)) => rest.add(&frame),
                other => panic!("the replay stopped: {other:?} after seqs {:?}", rest.seqs),
            }
        }
        assert_eq!(rest.out_of_order, None);
        assert_eq!(rest.seqs.first(), Some(&(last_seq + 1)), "{:?}", rest.seqs);
        assert_eq!(rest.seqs.last(), seen.seqs.last(), "up to the turn's end");
    });
}
