//! Structural tests of report.html's mechanism panels, read back with an XML parser: which
//! panels a scenario gets, their axes, their points and their legends.

use super::html::run_report;
use crate::experiment::batch::load::compile_with;
use crate::experiment::batch::replications::run_replications;
use crate::metrics::stats::aggregate;
use crate::scenario::{Format, Source, load_file, parse_override};
use quick_xml::events::Event;

/// One search dependency that fails for 30 s, one model that never does; 12 windows of 10 s.
const BASE: &str = r#"
[simulation]
duration_s = 120
warmup_s = 20
seed = 5
replications = 2
timeseries_window_s = 10

[[dependency]]
name = "search"
servers = 20
service_time = { p50_ms = 100, p95_ms = 300 }

[[dependency]]
name = "model"
servers = 20
service_time = { p50_ms = 100, p95_ms = 300 }

[[workflow]]
name = "answer"
arrivals = { rate_per_s = 30 }
deadline_ms = 5000

  [[workflow.step]]
  id = "search"
  dependency = "search"
  criticality = "soft"

  [[workflow.step]]
  id = "generate"
  after = ["search"]
  dependency = "model"

[[fault]]
kind = "errors"
target = "search"
start_s = 40
duration_s = 30
errors = { transient_transport = 0.9 }

[policy.plain]
timeout_ms = 2000
retry = { max_attempts = 2 }
"#;

/// A second policy with one breaker entry, which covers both dependencies.
const GUARDED: &str = r#"
[policy.guarded]
timeout_ms = 2000
retry = { max_attempts = 2 }

[[policy.guarded.circuit_breaker]]
minimum_number_of_calls = 20
sliding_window_size = 50
wait_duration_in_open_state_ms = 5000
permitted_number_of_calls_in_half_open_state = 5
"#;

/// Windows drawn: the simulated duration over the window.
const WINDOWS: usize = 12;

fn report_of(source: &Source, sets: &[&str]) -> String {
    let overrides: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    let model = compile_with(source, &overrides).unwrap();
    let policies: Vec<usize> = (0..model.policies.len()).collect();
    let runs = run_replications(&model, &policies, 0..model.world.replications, 1).unwrap();
    let names: Vec<&str> = model.policies.iter().map(|p| p.name.as_str()).collect();
    let aggregates: Vec<_> = runs.iter().map(|r| aggregate(&r.metrics)).collect();
    run_report(&model, &names, &aggregates, &runs)
}

fn report(toml: &str) -> String {
    report_of(&Source::from_text("panels.toml", toml, Format::Toml), &[])
}

/// An element of the page, with its attributes, children and own text.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
    text: String,
}

impl Node {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn all<'a>(&'a self, found: &mut Vec<&'a Node>, wanted: &dyn Fn(&Node) -> bool) {
        if wanted(self) {
            found.push(self);
        }
        for c in &self.children {
            c.all(found, wanted);
        }
    }

    fn find(&self, wanted: &dyn Fn(&Node) -> bool) -> Vec<&Node> {
        let mut found = Vec::new();
        self.all(&mut found, wanted);
        found
    }

    fn class(&self, class: &str) -> Vec<&Node> {
        self.find(&|n| n.attr("class") == Some(class))
    }

    fn named(&self, name: &str) -> Vec<&Node> {
        self.find(&|n| n.name == name)
    }

    fn title(&self) -> String {
        self.children.iter().find(|c| c.name == "title").map(|t| t.text.clone()).unwrap_or_default()
    }

    /// A legend entry as drawn: its own text, or its lines joined.
    fn legend_text(&self) -> String {
        let lines: Vec<&str> = self.children.iter().filter(|c| c.name == "tspan").map(|c| c.text.as_str()).collect();
        if lines.is_empty() { self.text.clone() } else { lines.join(" ") }
    }
}

fn element(e: &quick_xml::events::BytesStart) -> Node {
    let attrs = e
        .attributes()
        .map(|a| {
            let a = a.unwrap();
            (a.key.0.to_string(), a.value.into_owned())
        })
        .collect();
    Node { name: e.name().0.to_string(), attrs, ..Node::default() }
}

/// The page as a tree; it must be well-formed XML.
fn parse(html: &str) -> Node {
    let mut reader = quick_xml::Reader::from_str(html);
    let mut stack = vec![Node::default()];
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) => stack.push(element(&e)),
            Event::Empty(e) => stack.last_mut().unwrap().children.push(element(&e)),
            Event::End(_) => {
                let done = stack.pop().unwrap();
                stack.last_mut().unwrap().children.push(done);
            }
            Event::Text(t) => stack.last_mut().unwrap().text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => {
                let entity = r.xml10_content().into_owned();
                let c = match entity.as_str() {
                    "lt" => "<",
                    "gt" => ">",
                    "amp" => "&",
                    "quot" => "\"",
                    "#39" => "'",
                    other => panic!("unexpected entity {other}"),
                };
                stack.last_mut().unwrap().text.push_str(c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "every element is closed");
    stack.pop().unwrap()
}

/// The panel (chart and note) whose chart has this title.
fn panel<'a>(page: &'a Node, title: &str) -> Option<&'a Node> {
    page.class("panel").into_iter().find(|p| p.class("chart").first().is_some_and(|svg| svg.title() == title))
}

fn chart(panel: &Node) -> &Node {
    panel.class("chart")[0]
}

fn note(panel: &Node) -> String {
    panel.class("note")[0].text.clone()
}

fn legend(chart: &Node) -> Vec<String> {
    chart.class("legend").iter().map(|t| t.legend_text()).collect()
}

fn ticks(chart: &Node) -> Vec<String> {
    chart.class("tick").iter().map(|t| t.text.clone()).collect()
}

/// The y axis's tick labels, bottom up (they are the ticks anchored at their end).
fn y_ticks(chart: &Node) -> Vec<String> {
    chart.class("tick").iter().filter(|t| t.attr("text-anchor") == Some("end")).map(|t| t.text.clone()).collect()
}

/// Every polyline's points as numbers.
fn lines(chart: &Node) -> Vec<Vec<(f64, f64)>> {
    chart
        .named("polyline")
        .iter()
        .map(|l| {
            l.attr("points")
                .unwrap()
                .split(' ')
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// The y of a named level's grid line (its tick label sits 4 px below it).
fn level_y(chart: &Node, level: &str) -> f64 {
    let tick = chart.class("tick").into_iter().find(|t| t.text == level).unwrap();
    tick.attr("y").unwrap().parse::<f64>().unwrap() - 4.0
}

fn headings(page: &Node) -> Vec<String> {
    page.named("h2").iter().map(|h| h.text.clone()).collect()
}

#[test]
fn a_scenario_without_mechanisms_has_no_mechanism_panels() {
    let page = parse(&report(BASE));
    let h = headings(&page);
    assert!(!h.contains(&"Circuit breakers".to_string()) && !h.contains(&"Refusals".to_string()), "{h:?}");
    assert!(h.contains(&"Queues".to_string()), "every dependency has a queue: {h:?}");
    assert!(panel(&page, "Degradation mode per window").is_none());
}

#[test]
fn breakers_get_their_state_per_window_and_their_transitions() {
    let page = parse(&report(&format!("{BASE}{GUARDED}")));
    assert!(headings(&page).contains(&"Circuit breakers".to_string()));
    let states = panel(&page, "Circuit breaker state per window").expect("a state panel");
    let svg = chart(states);
    // The searches' breaker opened, the model's never did: it comes second, flat at closed.
    assert_eq!(legend(svg), ["guarded / search", "guarded / model"]);
    assert_eq!(y_ticks(svg), ["closed", "half-open", "open"], "the y axis names every state");
    assert!(level_y(svg, "closed") > level_y(svg, "open"));
    let drawn = lines(svg);
    assert_eq!(drawn.len(), 2);
    assert!(drawn.iter().all(|l| l.len() == WINDOWS), "a point per window");
    let (closed, open) = (level_y(svg, "closed"), level_y(svg, "open"));
    assert!(drawn[0].iter().any(|p| (p.1 - open).abs() < 0.2), "the search breaker reaches open: {:?}", drawn[0]);
    assert!(drawn[1].iter().all(|p| (p.1 - closed).abs() < 0.2), "the model's stays at closed: {:?}", drawn[1]);
    // Points sit at the windows' ends: the first at 10 s, the last at 120 s, evenly spaced.
    let xs: Vec<f64> = drawn[0].iter().map(|p| p.0).collect();
    let step = xs[1] - xs[0];
    assert!(xs.windows(2).all(|w| (w[1] - w[0] - step).abs() < 0.2), "{xs:?}");
    assert_eq!(svg.class("span").len(), 1, "the fault is shaded");
    let text = note(states);
    assert!(text.contains("guarded / model: closed throughout"), "{text}");
    assert!(text.contains("guarded / search: opened "), "{text}");
    assert!(text.contains("Policy plain has no breaker"), "{text}");
    let transitions = panel(&page, "Circuit breaker transitions").expect("a transitions panel");
    assert_eq!(legend(chart(transitions)), ["guarded / search", "guarded / model"]);
    assert_eq!(chart(transitions).named("rect").iter().filter(|r| r.attr("fill").is_some()).count(), 2 * 3 + 2);
}

#[test]
fn refusals_are_drawn_by_reason_with_their_values() {
    let page = parse(&report(&format!("{BASE}{GUARDED}")));
    let by_reason = panel(&page, "Refusals by reason").expect("a refusals panel");
    let svg = chart(by_reason);
    assert_eq!(legend(svg), ["guarded", "plain"], "policies by name");
    let categories = ticks(svg).into_iter().filter(|t| t.parse::<f64>().is_err()).collect::<Vec<_>>();
    assert_eq!(categories, ["circuit_open"], "only the reason a policy can give or gave");
    let rows = by_reason.named("tr");
    assert_eq!(rows.len(), 3, "a header and a row per policy");
    let plain: Vec<&str> = rows[2].named("td").iter().map(|c| c.text.as_str()).collect();
    assert_eq!(plain, ["plain", "0"]);
    let over_time = panel(&page, "Refused by a guard or expired, per 10 s window").expect("refusals over time");
    let drawn = lines(chart(over_time));
    assert_eq!(drawn.len(), 2);
    assert!(drawn.iter().all(|l| l.len() == WINDOWS));
    assert!(note(by_reason).contains("refused_total.<reason>"));
}

#[test]
fn the_mode_timeline_names_its_levels_and_the_policies_without_modes() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/meeting-analysis-incident.toml");
    let source = load_file(&path).unwrap();
    let page = parse(&report_of(&source, &["simulation.replications=1", "simulation.duration_s=900"]));
    let modes = panel(&page, "Degradation mode per window").expect("a mode panel");
    let svg = chart(modes);
    assert_eq!(legend(svg), ["resilient"]);
    assert_eq!(y_ticks(svg), ["normal", "recovery", "constrained", "degraded", "handoff", "paused"]);
    assert!(note(modes).contains("Policy naive has no rules"), "{}", note(modes));
}

/// A third policy with a bulkhead and a gRPC retry throttle on the searches.
const LIMITED: &str = r#"
[policy.limited]
timeout_ms = 2000
retry = { max_attempts = 2 }

[[policy.limited.bulkhead]]
dependency = "search"
max_concurrent_calls = 5

[[policy.limited.bulkhead]]
dependency = "search"
max_concurrent_calls = 50

[[policy.limited.retry_budget]]
kind = "grpc"
dependency = "search"
max_tokens = 10
"#;

#[test]
fn levels_are_columns_named_by_scope_budgets_first_as_the_pipeline_orders_them() {
    let source = Source::from_text("panels.toml", &format!("{BASE}{LIMITED}"), Format::Toml);
    let model = compile_with(&source, &[]).unwrap();
    let p = model.policy_index("limited").unwrap();
    assert_eq!(
        model.labels(p).levels,
        ["retry_budget.search.level", "bulkhead.search.in_use", "bulkhead.search-2.in_use"],
        "a second instance on the same scope gets -2"
    );
    assert!(model.labels(model.policy_index("plain").unwrap()).levels.is_empty());
}

#[test]
fn bulkheads_and_retry_budgets_get_a_panel_of_their_level() {
    let page = parse(&report(&format!("{BASE}{LIMITED}")));
    let h = headings(&page);
    assert!(h.contains(&"Queues and bulkheads".to_string()) && h.contains(&"Retry budgets".to_string()), "{h:?}");
    let bulkheads = panel(&page, "Bulkhead permits in use at window end").expect("a bulkhead panel");
    let svg = chart(bulkheads);
    // Both pools hold the same attempts (the small one admits them to the large one), so they
    // moved alike and keep the pipeline's order.
    assert_eq!(legend(svg), ["limited / search", "limited / search-2"]);
    let drawn = lines(svg);
    assert!(drawn.iter().all(|l| l.len() == WINDOWS), "a point per window");
    let top: f64 = y_ticks(svg).iter().filter_map(|t| t.parse::<f64>().ok()).fold(0.0, f64::max);
    assert!((1.0..=5.0).contains(&top), "the axis ends at the largest level, at most the 5 permits: {top}");
    let text = note(bulkheads);
    assert!(
        text.contains("limited / search (5 permits): from ") && text.contains("Policy plain has no bulkhead."),
        "{text}"
    );
    let budget = panel(&page, "gRPC retry throttle tokens at window end").expect("a budget panel");
    assert_eq!(legend(chart(budget)), ["limited / search"]);
    assert_eq!(lines(chart(budget))[0].len(), WINDOWS);
    let text = note(budget);
    assert!(text.contains("max_tokens 10, retries stop at 5 or fewer"), "{text}");
    assert!(text.contains("limited / search (max_tokens 10, retries stop at 5 or fewer): from 0 to 10"), "{text}");
}

#[test]
fn without_bulkheads_or_budgets_there_are_no_level_panels() {
    let page = parse(&report(BASE));
    let h = headings(&page);
    assert!(h.contains(&"Queues".to_string()) && !h.contains(&"Retry budgets".to_string()), "{h:?}");
    assert!(panel(&page, "Bulkhead permits in use at window end").is_none());
}

#[test]
fn a_mechanism_line_takes_its_policys_colour_from_the_charts_of_every_policy() {
    // `zoned` sorts after `plain`, so it is the second policy everywhere.
    let zoned = "\n[policy.zoned]\ntimeout_ms = 2000\n\n[[policy.zoned.circuit_breaker]]\ndependency = \"search\"\nminimum_number_of_calls = 20\n";
    let page = parse(&report(&format!("{BASE}{zoned}")));
    let goodput = page.class("chart").into_iter().find(|c| c.title().starts_with("On-time goodput per")).unwrap();
    let strokes = |svg: &Node| -> Vec<String> {
        svg.named("polyline").iter().map(|l| l.attr("stroke").unwrap().to_string()).collect()
    };
    let everyone = strokes(goodput);
    let states = chart(panel(&page, "Circuit breaker state per window").unwrap());
    assert_eq!(legend(states), ["zoned / search"]);
    assert_eq!(strokes(states), [everyone[1].clone()], "zoned's colour, not the first colour");
    let swatches: Vec<&str> = states.named("rect").iter().filter_map(|r| r.attr("fill")).collect();
    assert_eq!(swatches, [everyone[1].as_str()], "the legend says the same");
}

/// The incident's first chart is on-time goodput: during the fault the naive policy, whose
/// answers mostly come past their deadline, draws below the resilient one (on goodput that
/// counts late answers it drew above), and the deadline misses beside it show why.
#[test]
fn the_first_chart_is_on_time_goodput_and_the_resilient_policy_leads_it_during_the_fault() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/meeting-analysis-incident.toml");
    let source = load_file(&path).unwrap();
    let page = parse(&report_of(&source, &["simulation.replications=2", "simulation.duration_s=1200"]));
    let charts = page.class("chart");
    assert!(charts[0].title().starts_with("On-time goodput per 60 s window"), "{}", charts[0].title());
    assert!(charts[1].title().starts_with("Deadline misses per 60 s window"), "{}", charts[1].title());
    // Lines in the file's policy order (naive, resilient); y grows downwards in SVG. The fault
    // starts at 600 s: from its second window to the run's end (1200 s).
    let in_fault = |chart: &Node| -> Vec<(f64, f64)> {
        let drawn = lines(chart);
        assert_eq!(drawn.len(), 2);
        let xs: Vec<f64> = drawn[0].iter().map(|p| p.0).collect();
        let (first, last) = (xs[0], xs[xs.len() - 1]);
        let x_of = |s: f64| first + (last - first) * (s - 60.0) / (1200.0 - 60.0);
        drawn[0]
            .iter()
            .zip(&drawn[1])
            .filter(|(n, _)| n.0 >= x_of(720.0) - 0.5 && n.0 <= x_of(1200.0) + 0.5)
            .map(|(n, r)| (n.1, r.1))
            .collect()
    };
    let on_time = in_fault(charts[0]);
    assert!(on_time.len() >= 8, "{on_time:?}");
    assert!(on_time.iter().all(|(naive, resilient)| resilient < naive), "resilient above naive: {on_time:?}");
    let misses = in_fault(charts[1]);
    assert!(misses.iter().all(|(naive, resilient)| naive < resilient), "naive misses more: {misses:?}");
    // Each line has its 95 % band and a tooltip on every point.
    assert_eq!(charts[0].class("band").len(), 2);
    let points = charts[0].class("point");
    assert_eq!(points.len(), 2 * lines(charts[0])[0].len());
    assert!(points.iter().all(|p| p.title().contains("window ending at")), "{:?}", points[0].title());
}

/// Estimated boxes of every unrotated text of a chart (the estimate `TextBox` makes, which
/// errs on the wide side), with the text.
fn text_boxes(chart: &Node) -> Vec<(String, super::svg::TextBox)> {
    chart
        .named("text")
        .into_iter()
        .filter(|t| t.attr("transform").is_none() && !t.text.trim().is_empty())
        .map(|t| {
            let font = match t.attr("class").unwrap_or("") {
                c if c.contains("title") => 13.0 * 1.1,
                c if c.contains("legend") || c.contains("axis-label") => 11.0,
                _ => 10.0,
            };
            let x: f64 = t.attr("x").unwrap().parse().unwrap();
            let y: f64 = t.attr("y").unwrap().parse().unwrap();
            let anchor = t.attr("text-anchor").unwrap_or("start");
            (t.text.clone(), super::svg::TextBox::of(x, y, anchor, &t.text, font))
        })
        .collect()
}

fn assert_no_overlap(chart: &Node) {
    let boxes = text_boxes(chart);
    for (i, (a, ba)) in boxes.iter().enumerate() {
        for (b, bb) in &boxes[i + 1..] {
            // Coordinates are written to 0.1 px: labels placed edge to edge may meet by that much.
            assert!(
                !ba.grown(-0.2).overlaps(&bb.grown(-0.2)),
                "`{a}` {ba:?} overlaps `{b}` {bb:?} in `{}`",
                chart.title()
            );
        }
    }
}

/// The texts of a chart's point labels (class `tick point-label`).
fn point_labels(chart: &Node) -> Vec<String> {
    chart.find(&|n| n.attr("class").is_some_and(|c| c.contains("point-label"))).iter().map(|t| t.text.clone()).collect()
}

/// A crowded front (twenty candidates within a hair of each other, twins among them) and two
/// candidates that left the race far away: no two labels overlap, on the pairs or on the
/// parallel coordinates, and the front spans the chart instead of a corner.
#[test]
fn a_crowded_front_has_no_overlapping_labels_and_outliers_do_not_squash_it() {
    use super::html::{TuneAxis, TuneReport, tune_report};
    use super::svg::PointKind;
    let n = 24;
    let value = |i: usize, k: usize| -> (f64, f64, f64) {
        match i {
            // Two outliers: far off on every objective.
            22 => (0.5, 0.49, 0.51),
            23 => (0.6, 0.59, 0.61),
            // Twins: 3 and 4 share their figures.
            4 => value_of(3, k),
            i => value_of(i, k),
        }
    };
    fn value_of(i: usize, k: usize) -> (f64, f64, f64) {
        let t = i as f64 / 21.0;
        let v = match k {
            0 => 0.96 + 0.02 * t,
            1 => 0.001 + 0.03 * t,
            2 => 0.3 - 0.2 * t * t,
            _ => 0.005 + 0.009 * t,
        };
        (v, v - 0.002, v + 0.002)
    }
    let labels: Vec<String> = (0..n).map(|i| format!("#{i}")).collect();
    let kinds: Vec<PointKind> = (0..n)
        .map(|i| match i {
            20 => PointKind::Current,
            22 | 23 => PointKind::Left,
            _ => PointKind::Front,
        })
        .collect();
    let names = [
        "max:incident.auto_completion_ratio",
        "min:incident.deadline_exceeded_ratio",
        "max:full_quality_completion_ratio",
        "min:cost_money_per_success",
    ];
    let axes = names
        .iter()
        .enumerate()
        .map(|(k, name)| TuneAxis {
            label: name.to_string(),
            larger_is_better: name.starts_with("max:"),
            values: (0..n).map(|i| value(i, k)).collect(),
        })
        .collect();
    let html = tune_report(&TuneReport {
        scenario: "crowded",
        note: "",
        labels,
        kinds,
        axes,
        table_header: vec!["candidate".into(), "policy.resilient.retry.max_attempts".into()],
        table_rows: vec![vec!["#1".into(), "3".into()]],
    });
    // The front table's headers may wrap at each `.` and `_` (a path as one word made the
    // table wider than the window); the text itself is unchanged.
    assert!(html.contains("<th>policy.<wbr/>resilient.<wbr/>retry.<wbr/>max_<wbr/>attempts</th>"), "{html}");
    assert_eq!(super::html::breakable("a<b"), "a&lt;b");
    let page = parse(&html);
    let charts = page.class("chart");
    assert_eq!(charts.len(), 4, "the parallel coordinates and three pairs");
    for chart in &charts {
        assert_no_overlap(chart);
    }
    for pair in &charts[1..] {
        assert_eq!(pair.class("off").len(), 2, "both outliers at the edge: {}", pair.title());
        // The front's points (blue dots, the legend's left out) spread over most of the plot.
        let xs: Vec<f64> = pair
            .named("circle")
            .iter()
            .filter(|c| c.attr("r") == Some("4") && !c.title().is_empty())
            .map(|c| c.attr("cx").unwrap().parse().unwrap())
            .collect();
        let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        assert!(hi - lo > 0.6 * (super::svg::WIDTH - super::svg::LEFT - super::svg::RIGHT), "{lo}..{hi}");
        assert!(!point_labels(pair).is_empty(), "some labels are drawn");
    }
    // The parallel chart's labels at the right: none left out, each named candidate in one
    // label's tooltip (twins and close neighbours share a label).
    let right: Vec<String> = charts[0]
        .find(&|n| n.attr("class").is_some_and(|c| c.contains("point-label")))
        .iter()
        .map(|t| t.title())
        .collect();
    for i in (0..n).filter(|i| *i < 22) {
        let name = format!("#{i}");
        assert!(right.iter().any(|t| t.split(", ").any(|x| x == name)), "{name} in none of {right:?}");
    }
    assert!(right.iter().any(|t| t.contains("#3, #4")), "twins share a label: {right:?}");
}

/// A two-parameter sweep's recovery time: "never" (every replication stayed down) is a dark
/// red cell named so, distinct from a cell where the figure is not applicable (struck white)
/// and from the best (lightest) cell; headings name the figure once.
#[test]
fn the_map_marks_never_apart_from_not_applicable() {
    use super::digest::{Digest, KeyMetrics};
    use super::html::sweep_report;
    use crate::experiment::batch::grid::{Param, SweepLayout};
    use crate::metrics::stats::{Aggregate, Estimate};
    let layout = SweepLayout {
        scenario: "s".into(),
        seed: 1,
        params: vec![
            Param { path: "a".into(), values: vec!["1".into(), "2".into()] },
            Param { path: "b".into(), values: vec!["1".into(), "2".into()] },
        ],
        metric_names: vec![],
        points: 4,
    };
    let mut d = Digest::new(&layout, KeyMetrics::chosen(&["recovery_time_s".into()]));
    let estimate = |v: f64| Estimate { mean: v, low: v - 30.0, high: v + 30.0, n: 4 };
    // Point 0 recovers at once, 1 after 20 s, 2 never, 3 has no fault to recover from.
    for (point, time, never) in [(0, 0.0, 0.0), (1, 20.0, 0.0), (2, f64::NAN, 1.0), (3, f64::NAN, f64::NAN)] {
        let mut estimates = std::collections::BTreeMap::new();
        estimates.insert("recovery_time_s".to_string(), estimate(time));
        estimates.insert("recovery_never_total".to_string(), estimate(never));
        let values = [format!("{}", point / 2 + 1), format!("{}", point % 2 + 1)];
        d.add(point, &values, "p", &Aggregate { replications: 4, estimates });
    }
    let page = parse(&sweep_report(&layout, &d.shown()));
    assert_eq!(headings(&page), ["recovery_time_s"], "named once");
    let map = page.class("chart")[0];
    assert_eq!(map.class("title")[0].text, "p", "the map's heading is its policy");
    let cells = map.class("heat");
    let fill = |k: usize| cells[k].attr("fill").unwrap().to_string();
    assert_eq!(fill(2), super::svg::NEVER, "never is the dark red past the scale");
    assert!(cells[2].title().ends_with("never (no replication recovered)"));
    assert_eq!(fill(3), "#ffffff");
    assert!(cells[3].title().ends_with("not applicable (undefined)"));
    assert_eq!(map.class("struck").len(), 1, "only the undefined cell is struck through");
    assert_ne!(fill(0), fill(3), "the best cell is not the blank one");
    let texts: Vec<String> = map.class("cell").iter().map(|t| t.text.clone()).collect();
    assert_eq!(texts, ["0", "20", "never", "n/a"]);
    // Intervals are clipped to the figure's range: 0 ± 30 s reads 0 to 30.
    assert!(cells[0].title().contains("95 % CI 0 to 30"), "{}", cells[0].title());
    let legend: Vec<String> = map.class("legend").iter().map(|t| t.text.clone()).collect();
    assert!(legend.contains(&"never (worst)".to_string()) && legend.contains(&"n/a: undefined".to_string()));
}

/// One parameter on a geometric grid: a log axis with a tick at each value, evenly spaced;
/// bands within the figure's range; "never" marked at the top; whole-number ticks only.
#[test]
fn a_geometric_sweep_is_drawn_on_a_log_axis_with_clipped_bands() {
    use super::digest::{Digest, KeyMetrics};
    use super::html::sweep_report;
    use crate::experiment::batch::grid::{Param, SweepLayout};
    use crate::metrics::stats::{Aggregate, Estimate};
    let values = ["1", "2", "4", "8", "16"];
    let layout = SweepLayout {
        scenario: "s".into(),
        seed: 1,
        params: vec![Param { path: "x".into(), values: values.iter().map(|v| v.to_string()).collect() }],
        metric_names: vec![],
        points: 5,
    };
    let mut d = Digest::new(&layout, KeyMetrics::chosen(&["auto_completion_ratio".into(), "recovery_time_s".into()]));
    for (point, v) in values.iter().enumerate() {
        let mut estimates = std::collections::BTreeMap::new();
        // A share whose Student-t interval leaves [0, 1] on both sides.
        estimates.insert("auto_completion_ratio".into(), Estimate { mean: 0.5, low: -0.2, high: 1.5, n: 2 });
        let (time, never) = if point == 4 { (f64::NAN, 1.0) } else { (10.0, 0.0) };
        estimates.insert("recovery_time_s".into(), Estimate { mean: time, low: time - 1.0, high: time + 1.0, n: 2 });
        estimates.insert("recovery_never_total".into(), Estimate { mean: never, low: never, high: never, n: 2 });
        d.add(point, &[v.to_string()], "p", &Aggregate { replications: 2, estimates });
    }
    let page = parse(&sweep_report(&layout, &d.shown()));
    let charts = page.class("chart");
    let share = charts[0];
    let x_ticks: Vec<(String, f64)> = share
        .class("tick")
        .iter()
        .filter(|t| t.attr("text-anchor") == Some("middle"))
        .map(|t| (t.text.clone(), t.attr("x").unwrap().parse().unwrap()))
        .collect();
    assert_eq!(x_ticks.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), values);
    let gaps: Vec<f64> = x_ticks.windows(2).map(|w| w[1].1 - w[0].1).collect();
    assert!(gaps.iter().all(|g| (g - gaps[0]).abs() < 0.2), "evenly spaced: {gaps:?}");
    // The band stays between the y of 0 and the y of 1.
    let y_of = |label: &str| -> f64 {
        let t = share.class("tick").into_iter().find(|t| t.text == label && t.attr("text-anchor") == Some("end"));
        t.unwrap().attr("y").unwrap().parse::<f64>().unwrap() - 4.0
    };
    let band = share.class("band")[0].attr("points").unwrap().to_string();
    for p in band.split(' ') {
        let y: f64 = p.split_once(',').unwrap().1.parse().unwrap();
        assert!(y <= y_of("0") + 0.1 && y >= y_of("1") - 0.1, "{y} outside [{}, {}]", y_of("1"), y_of("0"));
    }
    let time = charts[1];
    assert_eq!(time.class("never").len(), 1, "the point that never recovered");
    assert!(time.class("never")[0].title().contains("x = 16: never"));
    assert_eq!(time.class("point").len(), 4, "a dot with a tooltip per defined point");
}

#[test]
fn count_axes_tick_whole_numbers() {
    let page = parse(&report(&format!("{BASE}{GUARDED}")));
    for title in ["Circuit breaker transitions", "Refusals by reason", "Outcomes of root runs"] {
        let svg = page.class("chart").into_iter().find(|c| c.title() == title).unwrap();
        let ticks: Vec<f64> = y_ticks(svg).iter().filter_map(|t| t.parse().ok()).collect();
        assert!(!ticks.is_empty() && ticks.iter().all(|t| t.fract() == 0.0), "{title}: {ticks:?}");
    }
}

/// The summary table says each figure as the terminal's headline does: `mean [low, high]`, the
/// 95 % interval clipped to what the figure can take, not a half-width that reads as a range
/// below 0 (the incident's resilient recovery time was "30 ±70.95": -41 s to 101 s).
#[test]
fn the_summary_table_shows_intervals_clipped_to_the_figures_range() {
    let page = parse(&report(&format!("{BASE}{GUARDED}")));
    let table = page.named("table")[0];
    let mut intervals = 0;
    for row in table.named("tr").iter().skip(1) {
        let cells = row.named("td");
        let metric = cells[0].text.clone();
        let range = crate::metrics::range::Range::of_metric(&metric);
        for cell in &cells[1..] {
            let text = &cell.text;
            assert!(!text.contains('±'), "{metric}: {text}");
            if let Some((mean, interval)) = text.split_once(" [") {
                let (low, high) = interval.trim_end_matches(']').split_once(", ").unwrap();
                let (mean, low, high): (f64, f64, f64) =
                    (mean.parse().unwrap(), low.parse().unwrap(), high.parse().unwrap());
                assert!(low <= mean && mean <= high, "{metric}: {text}");
                assert_eq!((range.clip(low), range.clip(high)), (low, high), "{metric}: {text} outside its range");
                intervals += 1;
            }
        }
    }
    assert!(intervals >= 6, "{intervals} intervals");
    let note = &page.named("p")[0].text;
    assert!(note.contains("[low, high]"), "{note}");
}

/// A recovery time where some replications never recovered is the mean over those that did:
/// metastability's naive policy at 50 servers x 10 s read "30" (darkest blue, 1 of 4 recovered
/// after 30 s) with nothing saying the other 3 never did. Such a cell has a dark red edge, says
/// the share under its mean and in its tooltip, and the legend names the edge.
#[test]
fn a_recovery_time_beside_replications_that_never_recovered_says_so() {
    use super::digest::{Digest, KeyMetrics};
    use super::html::sweep_report;
    use crate::experiment::batch::grid::{Param, SweepLayout};
    use crate::metrics::stats::{Aggregate, Estimate};
    let layout = SweepLayout {
        scenario: "s".into(),
        seed: 1,
        params: vec![
            Param { path: "a".into(), values: vec!["1".into(), "2".into()] },
            Param { path: "b".into(), values: vec!["1".into(), "2".into()] },
        ],
        metric_names: vec![],
        points: 4,
    };
    let mut d = Digest::new(&layout, KeyMetrics::chosen(&["recovery_time_s".into()]));
    let estimate = |v: f64| Estimate { mean: v, low: v, high: v, n: 4 };
    // Point 0 recovers at once every time, 1 once in four (after 30 s), 2 never, 3 after 10 s.
    for (point, time, never) in [(0, 0.0, 0.0), (1, 30.0, 0.75), (2, f64::NAN, 1.0), (3, 10.0, 0.0)] {
        let mut estimates = std::collections::BTreeMap::new();
        estimates.insert("recovery_time_s".to_string(), estimate(time));
        estimates.insert("recovery_never_total".to_string(), estimate(never));
        let values = [format!("{}", point / 2 + 1), format!("{}", point % 2 + 1)];
        d.add(point, &values, "p", &Aggregate { replications: 4, estimates });
    }
    let page = parse(&sweep_report(&layout, &d.shown()));
    let map = page.class("chart")[0];
    let edges = map.class("partly-never");
    assert_eq!(edges.len(), 1, "only the cell that recovered sometimes");
    assert_eq!(edges[0].attr("stroke"), Some(super::svg::NEVER));
    let cells = map.class("heat");
    assert!(cells[1].title().contains("75 % of the replications never recovered"), "{}", cells[1].title());
    assert!(!cells[3].title().contains("never"), "{}", cells[3].title());
    let under: Vec<String> = map.class("cell-ci").iter().map(|t| t.text.clone()).collect();
    assert_eq!(under, ["75 % never"]);
    let legend: Vec<String> = map.class("legend").iter().map(|t| t.legend_text()).collect();
    assert!(legend.iter().any(|l| l.starts_with("red edge: some never recovered")), "{legend:?}");
    assert_no_overlap(map);
}

#[test]
fn a_closed_population_gets_its_users_over_time_and_open_load_none() {
    let title = "Users at each 10 s window's end";
    let users_chart = |page: &Node| -> Option<Vec<Vec<(f64, f64)>>> {
        let charts = page.class("chart");
        let chart = charts.into_iter().find(|c| c.title() == title)?;
        assert_eq!(legend(chart), ["plain present", "plain thinking"]);
        Some(lines(chart))
    };
    assert!(users_chart(&parse(&report(BASE))).is_none(), "open arrivals have no users");
    // 30 users from the start, thinking 1 s between runs of about 0.25 s.
    let closed = BASE.replace(
        "arrivals = { rate_per_s = 30 }",
        "arrivals = { users = { count = 30, wait_time = { constant_s = 1 } } }",
    );
    let lines = users_chart(&parse(&report(&closed))).expect("a users chart");
    let (present, thinking) = (&lines[0], &lines[1]);
    assert_eq!(present.len(), WINDOWS);
    assert!(present.iter().all(|p| p.1 == present[0].1), "30 present in every window: {present:?}");
    // Most of a cycle is thinking, so its line sits below the present one (larger y) and above
    // half of it; the chart's y axis starts at 0, so half the users is halfway to its bottom.
    for (p, t) in present.iter().zip(thinking) {
        assert!(t.1 > p.1, "fewer think than are present: {p:?} {t:?}");
    }
}

#[test]
fn overlapping_faults_share_one_shaded_span_that_names_each() {
    // A second fault from 60 s to 90 s overlaps the search errors (40-70 s): one span from 40 s
    // to 90 s, not two layers where they overlap.
    let extra = "\n[[fault]]\nkind = \"latency\"\ntarget = \"model\"\nstart_s = 60\nduration_s = 30\nservice_time = { p50_ms = 900, p95_ms = 2000 }\n";
    let page = parse(&report(&format!("{BASE}{extra}")));
    let first = page.class("chart")[0];
    let spans = first.class("span");
    assert_eq!(spans.len(), 1, "one span for overlapping faults");
    let title = spans[0].title();
    assert!(title.contains("on search") && title.contains("on model"), "{title}");
    let width = |span: &Node| span.attr("width").unwrap().parse::<f64>().unwrap();
    // On the same axis (10 s to 120 s) the search errors alone shade 30 s, the union 50 s.
    let alone = parse(&report(BASE));
    let ratio = width(spans[0]) / width(alone.class("chart")[0].class("span")[0]);
    assert!((ratio - 50.0 / 30.0).abs() < 0.01, "{ratio}");
}
