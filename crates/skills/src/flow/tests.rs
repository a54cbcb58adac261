use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

fn summary(graph: &FlowGraph) -> (Vec<String>, Vec<String>) {
    let nodes = graph
        .nodes
        .iter()
        .map(|n| format!("{}:{:?}:{}", n.id, n.kind, n.label))
        .collect();
    let edges = graph
        .edges
        .iter()
        .map(|e| match &e.label {
            Some(l) => format!("{}-{l}->{}", e.from, e.to),
            None => format!("{}->{}", e.from, e.to),
        })
        .collect();
    (nodes, edges)
}

const REVIEW_MERMAID: &str = r#"flowchart TD
    %% a review loop
    S([BEGIN]) --> A[Run the tests and fix what fails]
    A --> B{"Are all tests green? (say \"yes\" or \"no\")"}
    B -->|yes| E([END])
    B -- no --> A
    classDef hot fill:#f00
    class A hot
"#;

#[test]
fn mermaid_reads_shapes_labels_and_both_label_styles() {
    let graph = parse_mermaid(REVIEW_MERMAID).unwrap();
    assert_eq!(
        summary(&graph),
        (
            vec![
                "S:Begin:BEGIN".to_owned(),
                "A:Task:Run the tests and fix what fails".to_owned(),
                "B:Decision:Are all tests green? (say \"yes\" or \"no\")".to_owned(),
                "E:End:END".to_owned(),
            ],
            vec![
                "S->A".to_owned(),
                "A->B".to_owned(),
                "B-yes->E".to_owned(),
                "B-no->A".to_owned(),
            ]
        )
    );
    assert_eq!((graph.begin.as_str(), graph.end.as_str()), ("S", "E"));
}

#[test]
fn mermaid_reads_chains_arrow_styles_and_odd_shapes() {
    let text = "graph LR\nBEGIN-->a[[one]]==>b((two)) -.-> c>three] ; c --- d[/four/]\nd -->|go| END\nd -->|stop| END2[end]\n";
    let err = parse_mermaid(text).unwrap_err();
    // Two END nodes (`END` by id, `END2` by label).
    assert!(err.to_string().contains("2 END nodes"), "{err}");
    let text = "graph LR\nBEGIN-->a[[one]]==>b((two)) -.-> c>three] ; c --- d[/four/]\nd --> END\n";
    let graph = parse_mermaid(text).unwrap();
    assert_eq!(
        summary(&graph).1,
        vec!["BEGIN->a", "a->b", "b->c", "c->d", "d->END"]
    );
    assert_eq!(graph.node("d").unwrap().label, "four");
    assert_eq!(graph.node("c").unwrap().label, "three");
}

#[test]
fn d2_reads_labels_blocks_chains_and_reverse_arrows() {
    let text = r#"# review loop
begin: BEGIN
test: "Run the tests" { shape: rectangle }
check: |md
  Are all tests green?
  Answer yes or no.
|
check.shape: diamond
done: END
begin -> test -> check
check -> done: yes
test <- check: no
style: {
  fill: red
}
"#;
    let graph = parse_d2(text).unwrap();
    assert_eq!(
        summary(&graph),
        (
            vec![
                "begin:Begin:BEGIN".to_owned(),
                "test:Task:Run the tests".to_owned(),
                "check:Decision:Are all tests green?\nAnswer yes or no.".to_owned(),
                "done:End:END".to_owned(),
            ],
            vec![
                "begin->test".to_owned(),
                "test->check".to_owned(),
                "check-yes->done".to_owned(),
                "check-no->test".to_owned(),
            ]
        )
    );
}

#[test]
fn unwalkable_charts_say_what_to_fix() {
    let table = [
        ("graph TD\nA[x] --> B[y]", "no BEGIN node"),
        (
            "graph TD\nS[BEGIN] --> A[x]\nA --> E[END]\nA --> S",
            "without a label",
        ),
        (
            "graph TD\nS[BEGIN] --> A[x]\nA -->|y| E[END]\nA -->|Y| A",
            "two branches labelled",
        ),
        ("graph TD\nS[BEGIN] --> A[x]\nE[END]", "no outgoing edge"),
        (
            "graph TD\nS[BEGIN] --> A[x]\nA --> A\nE[END]",
            "cannot be reached",
        ),
        (
            "graph TD\nS[BEGIN] --> A[x]\nA --> E[END]\nA[z] --> E",
            "labelled twice",
        ),
        (
            "graph TD\nS[BEGIN] --> A[x\nA --> E[END]",
            "line 2: node label not closed",
        ),
        ("graph TD\nS[BEGIN] --> A & B", "`&`"),
        ("graph TD\nS[BEGIN] -- x B", "line 2"),
        (
            "graph TD\nS[BEGIN] --> E[END]\nE --> S",
            "END (\"E\") cannot have outgoing",
        ),
    ];
    for (text, want) in table {
        let err = parse_mermaid(text).unwrap_err().to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
    let err = parse_d2("a: BEGIN\nb: END\na <-> b")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no direction"), "{err}");
    let err = parse_d2("a: |md\nx").unwrap_err().to_string();
    assert!(err.contains("line 1"), "{err}");
}

/// A random walkable chart: BEGIN → n1 → … → nk → END, plus labelled extra branches.
fn chart() -> impl Strategy<Value = (Vec<String>, Vec<(usize, usize)>)> {
    (1usize..6).prop_flat_map(|k| {
        let label = "[a-zA-Z][a-zA-Z ,?.!]{0,20}[a-zA-Z?]".prop_filter(
            "BEGIN and END are kinds",
            |l: &String| {
                !l.trim().eq_ignore_ascii_case("begin") && !l.trim().eq_ignore_ascii_case("end")
            },
        );
        let labels = proptest::collection::vec(label, k);
        let extra = proptest::collection::vec((0..k, 0..k + 1), 0..4);
        (labels, extra)
    })
}

/// The chart as mermaid and as d2 (node i is `n{i}`, END is `n{k}`).
fn render(labels: &[String], extra: &[(usize, usize)]) -> (String, String, usize) {
    let k = labels.len();
    let mut out: Vec<Vec<usize>> = (0..k).map(|i| vec![i + 1]).collect();
    for &(from, to) in extra {
        if !out[from].contains(&to) {
            out[from].push(to);
        }
    }
    let mut mermaid = String::from("flowchart TD\nS([BEGIN]) --> n0\n");
    let mut d2 = String::from("S: BEGIN\nS -> n0\n");
    for (i, label) in labels.iter().enumerate() {
        mermaid.push_str(&format!("n{i}[\"{label}\"]\n"));
        d2.push_str(&format!("n{i}: \"{label}\"\n"));
    }
    mermaid.push_str(&format!("n{k}([END])\n"));
    d2.push_str(&format!("n{k}: END\n"));
    let mut edges = 0;
    for (i, targets) in out.iter().enumerate() {
        for (j, to) in targets.iter().enumerate() {
            edges += 1;
            if targets.len() > 1 {
                mermaid.push_str(&format!("n{i} -->|b{j}| n{to}\n"));
                d2.push_str(&format!("n{i} -> n{to}: b{j}\n"));
            } else {
                mermaid.push_str(&format!("n{i} --> n{to}\n"));
                d2.push_str(&format!("n{i} -> n{to}\n"));
            }
        }
    }
    (mermaid, d2, edges + 1)
}

proptest! {
    #[test]
    fn mermaid_and_d2_give_the_same_graph((labels, extra) in chart()) {
        let (mermaid, d2, edges) = render(&labels, &extra);
        let a = parse_mermaid(&mermaid).unwrap();
        let b = parse_d2(&d2).unwrap();
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.edges.len(), edges);
        for (i, label) in labels.iter().enumerate() {
            prop_assert_eq!(&a.node(&format!("n{i}")).unwrap().label, label);
        }
    }

    #[test]
    fn any_text_is_a_graph_or_an_error(text in "\\PC{0,200}") {
        let _ = parse_mermaid(&text);
        let _ = parse_d2(&text);
    }

    #[test]
    fn chart_like_text_never_panics(text in "[A-Za-z0-9 \\[\\](){}<>|:;.\"=\\-\\n#&/]{0,200}") {
        let _ = parse_mermaid(&text);
        let _ = parse_d2(&text);
    }
}
