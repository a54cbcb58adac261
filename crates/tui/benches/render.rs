//! Frame-time benchmark: a 5,000-line transcript with an answer streaming at about 200
//! tokens/s (one ~4-token delta per frame), rendered at 120x40. Prints figures; the budget is
//! 16 ms per frame. Run: `cargo bench -p kimi-tui --bench render`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kimi_protocol::message::{ContentPart, Message};
use kimi_protocol::ops::Event;
use kimi_tui::{App, AppOptions};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const ANSWER: &str = "Here is what I found in the module:\n\n- the parser keeps **two** buffers\n- the writer flushes on every line\n\n```rust\nfn flush(&mut self) -> io::Result<()> {\n    self.out.write_all(&self.buf)?;\n    self.buf.clear();\n    Ok(())\n}\n```\n\n| step | cost |\n|---|---|\n| parse | 2 ms |\n| write | 5 ms |\n\nThat is the whole story.\n";

fn transcript(lines_wanted: usize) -> Vec<Message> {
    let mut out = Vec::new();
    let per_pair = ANSWER.lines().count() + 4;
    for i in 0..lines_wanted / per_pair {
        out.push(Message::user_text(format!(
            "question number {i}: why is the writer slow?"
        )));
        out.push(Message::assistant(vec![ContentPart::text(ANSWER)], vec![]));
    }
    out
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let n = v.len();
    let mean = v.iter().sum::<Duration>() / u32::try_from(n).unwrap_or(1);
    println!(
        "{name:<34} n={n:<5} mean={:>8.3}ms p50={:>8.3}ms p99={:>8.3}ms max={:>8.3}ms",
        mean.as_secs_f64() * 1e3,
        v[n / 2].as_secs_f64() * 1e3,
        v[n * 99 / 100].as_secs_f64() * 1e3,
        v[n - 1].as_secs_f64() * 1e3,
    );
}

fn main() {
    let area = Rect::new(0, 0, 120, 40);
    let messages = transcript(5000);
    let start = Instant::now();
    let mut app = App::new(AppOptions::default(), &messages, start);
    let mut buf = Buffer::empty(area);
    app.render(area, &mut buf);
    let first_paint = start.elapsed();
    println!(
        "first paint (build app + first frame; syntaxes load in the background): {:.3}ms",
        first_paint.as_secs_f64() * 1e3
    );
    let t = Instant::now();
    kimi_tui::highlight::warm();
    println!(
        "syntax set ready after a further {:.3}ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let total_lines = app.transcript_lines(120).len();
    println!(
        "transcript: {} messages, {total_lines} rendered lines at 120 columns",
        messages.len()
    );
    // Worst case from here on: every code block is highlighted.
    let mut buf = Buffer::empty(area);
    app.render(area, &mut buf);

    app.handle_event(Event::TurnStarted { turn_id: 1 }, Instant::now());
    let long_answer = ANSWER.repeat(20);
    let chunks: Vec<String> = long_answer
        .as_bytes()
        .chunks(16)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let mut frames = Vec::new();
    for chunk in &chunks {
        let t = Instant::now();
        app.handle_event(
            Event::AssistantDelta {
                text: chunk.clone(),
            },
            t,
        );
        let mut buf = Buffer::empty(area);
        app.render(area, &mut buf);
        frames.push(t.elapsed());
    }
    stats("streaming delta + frame", frames);

    let mut keys = Vec::new();
    for i in 0..300 {
        let t = Instant::now();
        let c = char::from(b'a' + (i % 26) as u8);
        app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), t);
        let mut buf = Buffer::empty(area);
        app.render(area, &mut buf);
        keys.push(t.elapsed());
    }
    stats("keystroke + frame (while streaming)", keys);

    let mut resize = Vec::new();
    for w in 60..120u16 {
        let a = Rect::new(0, 0, w, 40);
        let t = Instant::now();
        let mut buf = Buffer::empty(a);
        app.render(a, &mut buf);
        resize.push(t.elapsed());
    }
    stats("resize reflow frame", resize);
}
