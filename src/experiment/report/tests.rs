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
    let over_time = panel(&page, "Refused attempts per window, every reason").expect("refusals over time");
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
    let goodput = page.class("chart").into_iter().find(|c| c.title().starts_with("Goodput per window")).unwrap();
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
