//! README's tables of the incident are generated, not typed: this test builds the essay table
//! (from the committed reference output, which tests/reference_output.rs keeps equal to what the
//! binary writes, and from a no-fault run it makes) and the goodput table (from the reference's
//! timeseries.csv), and requires README to hold them between their markers.
//! The storm table runs both storm scenarios (scenarios/a2a-subscribe-storm.toml and
//! scenarios/a2a-poll-storm.toml) and shows each policy's figures side by side.
//! `FAULTLINE_UPDATE_DOCS=1 cargo test --test readme_tables` writes them into README instead.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One policy's summary.json: means and 95 % intervals.
struct Summary(Value);

impl Summary {
    fn read(path: &Path) -> Summary {
        Summary(serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
    }

    /// (mean, low, high) of a metric.
    fn get(&self, metric: &str) -> (f64, f64, f64) {
        let mean = self.0["metrics"][metric].as_f64().unwrap_or_else(|| panic!("no metric {metric}"));
        let ci = &self.0["ci95"][metric];
        (mean, ci[0].as_f64().unwrap_or(mean), ci[1].as_f64().unwrap_or(mean))
    }
}

/// A number with `decimals` places, thousands grouped by a space as README writes them.
fn number(v: f64, decimals: usize) -> String {
    let text = format!("{v:.decimals$}");
    let (whole, fraction) = text.split_once('.').map_or((text.as_str(), None), |(w, f)| (w, Some(f)));
    let (sign, digits) = whole.strip_prefix('-').map_or(("", whole), |d| ("-", d));
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && digits.len() >= 4 {
            grouped.push(' ');
        }
        grouped.push(c);
    }
    match fraction {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[derive(Clone, Copy)]
enum Style {
    /// A ratio as a percentage with this many decimals.
    Percent(usize),
    /// A plain number with this many decimals.
    Plain(usize),
}

/// A figure and its 95 % interval; an exact figure (no spread over the replications) is written
/// alone, and a 0 or 100 % plainly.
fn figure(s: &Summary, metric: &str, style: Style) -> String {
    let (mean, low, high) = s.get(metric);
    let (scale, decimals, unit) = match style {
        Style::Percent(d) => (100.0, d, " %"),
        Style::Plain(d) => (1.0, d, ""),
    };
    if low == high && (mean == 0.0 || mean == 1.0 && scale == 100.0) {
        return format!("{}{unit}", number(mean * scale, 0));
    }
    let n = |v: f64| number(v * scale, decimals);
    format!("{}{unit} [{}, {}]", n(mean), n(low), n(high))
}

fn ratio(a: &Summary, b: &Summary, metric_a: &str, metric_b: &str) -> String {
    format!("{:.2}", a.get(metric_a).0 / b.get(metric_b).0)
}

/// The essay's section-27 figures beside ours.
fn essay_table(naive: &Summary, resilient: &Summary, no_fault: &Summary) -> String {
    use Style::*;
    let row = |cells: [String; 6]| {
        let cells: Vec<String> =
            cells.iter().map(|c| if c.is_empty() { " ".into() } else { format!(" {c} ") }).collect();
        format!("|{}|\n", cells.join("|"))
    };
    let mut t = String::from(
        "| | essay naive | ours naive | essay resilient | ours resilient | ours resilient, no fault |\n|---|---|---|---|---|---|\n",
    );
    let f = figure;
    t += &row([
        "automatic completion".into(),
        "98.8 %".into(),
        f(naive, "incident.auto_completion_ratio", Percent(1)),
        "93.4 %".into(),
        f(resilient, "incident.auto_completion_ratio", Percent(1)),
        f(no_fault, "auto_completion_ratio", Percent(2)),
    ]);
    t += &row([
        "safe draft or handoff".into(),
        String::new(),
        f(naive, "incident.safe_outcome_ratio", Percent(1)),
        "99.6 %".into(),
        f(resilient, "incident.safe_outcome_ratio", Percent(1)),
        f(no_fault, "safe_outcome_ratio", Percent(1)),
    ]);
    t += &row([
        "retry amplification".into(),
        "2.9".into(),
        f(naive, "incident.retry_amplification_ratio", Plain(2)),
        "1.2".into(),
        f(resilient, "incident.retry_amplification_ratio", Plain(3)),
        f(no_fault, "retry_amplification_ratio", Plain(3)),
    ]);
    t += &row([
        "cost per success".into(),
        String::new(),
        f(naive, "incident.cost_per_success", Plain(1)),
        "1.18 x baseline".into(),
        format!(
            "{} = {} x no fault",
            f(resilient, "incident.cost_per_success", Plain(2)),
            ratio(resilient, no_fault, "incident.cost_per_success", "cost_per_success")
        ),
        f(no_fault, "cost_per_success", Plain(1)),
    ]);
    t += &row([
        "cost per success in dollars (whole run)".into(),
        String::new(),
        f(naive, "cost_money_per_success", Plain(4)),
        String::new(),
        format!(
            "{} = {} x no fault",
            f(resilient, "cost_money_per_success", Plain(4)),
            ratio(resilient, no_fault, "cost_money_per_success", "cost_money_per_success")
        ),
        f(no_fault, "cost_money_per_success", Plain(4)),
    ]);
    t += &row([
        "duplicate drafts".into(),
        "grow".into(),
        format!("{} a replication", f(naive, "incident.duplicate_effect_run_total", Plain(0))),
        "0".into(),
        f(resilient, "incident.duplicate_effect_run_total", Plain(0)),
        f(no_fault, "duplicate_effect_run_total", Plain(0)),
    ]);
    t += &row([
        "root deadline misses".into(),
        "14.2 %".into(),
        f(naive, "incident.deadline_exceeded_ratio", Percent(1)),
        "3.7 %".into(),
        f(resilient, "incident.deadline_exceeded_ratio", Percent(1)),
        f(no_fault, "deadline_exceeded_ratio", Percent(2)),
    ]);
    t += &row([
        "orphan tasks (whole run)".into(),
        String::new(),
        format!("{} a replication", f(naive, "orphan_task_total", Plain(0))),
        String::new(),
        format!("{}, all tracked", f(resilient, "orphan_task_total", Plain(0))),
        f(no_fault, "orphan_task_total", Plain(0)),
    ]);
    t += &row([
        "cost after the caller left (whole run)".into(),
        String::new(),
        f(naive, "cost_after_caller_left_units_total", Plain(0)),
        String::new(),
        f(resilient, "cost_after_caller_left_units_total", Plain(1)),
        f(no_fault, "cost_after_caller_left_units_total", Plain(2)),
    ]);
    t
}

/// timeseries.csv as (header, rows of numbers).
fn series(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
    let rows = lines.map(|l| l.split(',').map(|c| c.parse().unwrap_or(f64::NAN)).collect()).collect();
    (header, rows)
}

fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"))
}

/// Goodput per minute, every third window, as README shows it.
fn goodput_table(reference: &Path) -> String {
    let (h, naive) = series(&reference.join("naive/timeseries.csv"));
    let (hr, resilient) = series(&reference.join("resilient/timeseries.csv"));
    let mode = column(&hr, "workflow.meeting-analysis-draft.worst_mode");
    let queue = column(&h, "dependency.model-primary.queue_depth");
    let header = ["window (s)", "runs in", "goodput naive", "goodput resilient", "model queue naive", "resilient mode"];
    let mut rows = Vec::new();
    for (n, r) in naive.iter().zip(&resilient).step_by(3) {
        rows.push([
            format!("{:>4}-{}", n[column(&h, "window_start_s")], n[column(&h, "window_end_s")]),
            format!("{:.0}", n[column(&h, "arrivals")]),
            format!("{:.0}", n[column(&h, "goodput")]),
            format!("{:.0}", r[column(&hr, "goodput")]),
            format!("{:.0}", n[queue]),
            format!("{:.0}", r[mode]),
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| rows.iter().map(|r| r[c].len()).chain([header[c].len()]).max().unwrap()).collect();
    let mut t = String::from("```\n");
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c == 0 {
                s += &format!("{cell:<w$}", w = widths[0] + 2);
            } else {
                s += &format!("  {cell:>w$}", w = widths[c]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    t += &line(header.to_vec());
    for r in &rows {
        t += &line(r.iter().map(String::as_str).collect());
    }
    t + "```\n"
}

/// Replaces (or checks) the text between `<!-- NAME -->` and `<!-- /NAME -->`.
fn between(readme: &str, name: &str) -> (usize, usize) {
    let open = format!("<!-- generated by tests/readme_tables.rs: {name} -->\n");
    let close = format!("<!-- /{name} -->");
    let start = readme.find(&open).unwrap_or_else(|| panic!("README has no marker {open}")) + open.len();
    let end = readme[start..].find(&close).unwrap_or_else(|| panic!("README has no marker {close}")) + start;
    (start, end)
}

/// The incident's resilient policy with one `--set`, its summary.
fn resilient_with(set: &str) -> Summary {
    let tag = set.bytes().fold(0u64, |h, b| h.wrapping_mul(131).wrapping_add(u64::from(b)));
    let dir = std::env::temp_dir().join(format!("faultline-readme-attr-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("run")
        .arg(Path::new(ROOT).join("scenarios/meeting-analysis-incident.toml"))
        .args(["--policy", "resilient", "--set", set, "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{set}: {}", String::from_utf8_lossy(&o.stderr));
    let summary = Summary::read(&dir.join("resilient/summary.json"));
    std::fs::remove_dir_all(&dir).unwrap();
    summary
}

#[test]
fn readme_tables_are_the_reference_output_and_a_no_fault_run() {
    let reference = Path::new(ROOT).join("reference/meeting-analysis-incident");
    let dir = std::env::temp_dir().join(format!("faultline-readme-tables-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("run")
        .arg(Path::new(ROOT).join("scenarios/meeting-analysis-incident.toml"))
        .args(["--policy", "resilient", "--set", "fault=[]", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let no_fault = Summary::read(&dir.join("resilient/summary.json"));
    let naive = Summary::read(&reference.join("naive/summary.json"));
    let resilient = Summary::read(&reference.join("resilient/summary.json"));
    std::fs::remove_dir_all(&dir).unwrap();
    let variants: Vec<(&str, Summary)> = ATTRIBUTION_VARIANTS
        .iter()
        .map(|(label, actions)| {
            (*label, resilient_with(&format!("policy.resilient.runtime_policy.0.actions={actions}")))
        })
        .collect();
    let tables = [
        ("essay", essay_table(&naive, &resilient, &no_fault)),
        ("goodput", goodput_table(&reference)),
        ("attribution", attribution_table(&naive, &resilient, &variants)),
    ];

    let path = Path::new(ROOT).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    let update = std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some();
    for (name, table) in &tables {
        let (start, end) = between(&readme, name);
        if update {
            readme.replace_range(start..end, table);
        } else {
            assert_eq!(
                &readme[start..end],
                table.as_str(),
                "README's {name} table is not what the reference output gives (FAULTLINE_UPDATE_DOCS=1 rewrites it)"
            );
        }
    }
    if update {
        std::fs::write(&path, readme).unwrap();
    }
}

/// The resilient policy's CONSTRAINED actions one at a time: (label, the rule's `actions`).
const ATTRIBUTION_VARIANTS: [(&str, &str); 6] = [
    ("no action", "{}"),
    ("`retry_tokens_per_run = 1` only", "{ retry_tokens_per_run = 1 }"),
    ("`max_fanout = 2` only", "{ max_fanout = 2 }"),
    ("`disable_hedging` only", "{ disable_hedging = true }"),
    ("`omit_steps` only", r#"{ omit_steps = ["specialist", "related_ticket_search"] }"#),
    ("`fallback_first_steps` only", r#"{ fallback_first_steps = ["policy_rag", "plan", "synthesis"] }"#),
];

/// Which mechanism makes each section-27 figure: the incident's figures (runs started during
/// the fault) for the naive policy, the resilient one as written, and the resilient one with
/// CONSTRAINED's actions taken one at a time.
fn attribution_table(naive: &Summary, resilient: &Summary, variants: &[(&str, Summary)]) -> String {
    let metrics: [(&str, &str, Style); 7] = [
        ("completion", "incident.auto_completion_ratio", Style::Percent(1)),
        ("full quality", "incident.full_quality_completion_ratio", Style::Percent(1)),
        ("safe outcome", "incident.safe_outcome_ratio", Style::Percent(1)),
        ("amplification", "incident.retry_amplification_ratio", Style::Plain(3)),
        ("cost / success", "incident.cost_per_success", Style::Plain(2)),
        ("cost / full-quality success", "incident.cost_per_full_quality_success", Style::Plain(0)),
        ("deadline misses", "incident.deadline_exceeded_ratio", Style::Percent(1)),
    ];
    let mut t = String::from("| during the incident |");
    for (label, _, _) in &metrics {
        t += &format!(" {label} |");
    }
    t += "\n|---|";
    t += &"---|".repeat(metrics.len());
    t += "\n";
    let mut row = |label: &str, s: &Summary| {
        t += &format!("| {label} |");
        for (_, metric, style) in &metrics {
            let (mean, _, _) = s.get(metric);
            let cell = match style {
                Style::Percent(d) => format!("{} %", number(mean * 100.0, *d)),
                Style::Plain(d) => number(mean, *d),
            };
            t += &format!(" {cell} |");
        }
        t += "\n";
    };
    row("naive", naive);
    row("resilient, as written", resilient);
    for (label, s) in variants {
        row(&format!("resilient, CONSTRAINED with {label}"), s);
    }
    t
}

/// docs/scenario.md 8.16's figures of the incident's modes, from the reference output.
fn modes_paragraph(resilient: &Summary) -> String {
    let m = |name: &str| resilient.get(name).0;
    let measured = m("degradation_mode_time_s.normal")
        + m("degradation_mode_time_s.recovery")
        + m("degradation_mode_time_s.constrained")
        + m("degradation_mode_time_s.degraded")
        + m("degradation_mode_time_s.handoff")
        + m("degradation_mode_time_s.paused");
    format!(
        "The workflow spends {} s of the measured {} s in CONSTRAINED and {} s in RECOVERY (the workflow's\nown error budget is at risk or exhausted {} s); {} canary runs a replication, {} canary stages a\nreplication fail (the model still slow: each sends the workflow back for a longer dwell), {}\nreturns a replication go from RECOVERY back to CONSTRAINED, and `degradation_flaps_per_hour` is {}.\n",
        number(m("degradation_mode_time_s.constrained"), 1),
        number(measured, 0),
        number(m("degradation_mode_time_s.recovery"), 1),
        number(m("error_budget_time_s.at_risk") + m("error_budget_time_s.exhausted"), 1),
        number(m("degradation_canary_run_total"), 1),
        number(m("degradation_canary_stage_failed_total"), 2),
        number(m("degradation_transition_total.recovery.constrained"), 2),
        number(m("degradation_flaps_per_hour"), 2),
    )
}

#[test]
fn scenario_md_mode_figures_are_the_reference_output() {
    let reference = Path::new(ROOT).join("reference/meeting-analysis-incident");
    let resilient = Summary::read(&reference.join("resilient/summary.json"));
    let paragraph = modes_paragraph(&resilient);
    let path = Path::new(ROOT).join("docs/scenario.md");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = between(&doc, "modes");
    if std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some() {
        doc.replace_range(start..end, &paragraph);
        std::fs::write(&path, doc).unwrap();
    } else {
        assert_eq!(&doc[start..end], paragraph, "scenario.md 8.16's figures (FAULTLINE_UPDATE_DOCS=1 rewrites them)");
    }
}

/// docs/scenario.md 8.17's figures of the incident's task clients, from the reference output.
fn tasks_paragraph(naive: &Summary, resilient: &Summary) -> String {
    let (n, r) = (|name: &str| naive.get(name).0, |name: &str| resilient.get(name).0);
    format!(
        "On the incident (`scenarios/meeting-analysis-incident.toml`, 8 replications, whole runs), whose\nspecialist agent ignores 30 % of the cancels it gets during the fault, the naive client (above)\nleaves {} orphan tasks a replication, which spend {} cost units after their caller left\n(mostly the worker's own model retries; it sends no cancel, so its `cost_after_cancel_units_total`\nis {}); the resilient one (`propagate_deadline = true`, every other field its default) sends {}\ncancels, whose answers show {} tasks `canceled`, {} `completed` (each a late result), {} `failed`,\n{} `still_running` and {} `unknown`: {} orphans, {} of them on its orphan queue, and they spend\n{} units after the cancel.\n",
        number(n("orphan_task_total"), 1),
        number(n("cost_after_caller_left_units_total"), 1),
        number(n("cost_after_cancel_units_total"), 0),
        number(r("cancel_requested_total"), 1),
        number(r("cancel_observed_total.canceled"), 1),
        number(r("cancel_observed_total.completed"), 1),
        number(r("cancel_observed_total.failed"), 1),
        number(r("cancel_observed_total.still_running"), 1),
        number(r("cancel_observed_total.unknown"), 1),
        number(r("orphan_task_total"), 1),
        number(r("orphan_tracked_total"), 1),
        number(r("cost_after_cancel_units_total"), 1),
    )
}

#[test]
fn scenario_md_task_figures_are_the_reference_output() {
    let reference = Path::new(ROOT).join("reference/meeting-analysis-incident");
    let naive = Summary::read(&reference.join("naive/summary.json"));
    let resilient = Summary::read(&reference.join("resilient/summary.json"));
    let paragraph = tasks_paragraph(&naive, &resilient);
    let path = Path::new(ROOT).join("docs/scenario.md");
    let mut doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = between(&doc, "tasks");
    if std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some() {
        doc.replace_range(start..end, &paragraph);
        std::fs::write(&path, doc).unwrap();
    } else {
        assert_eq!(&doc[start..end], paragraph, "scenario.md 8.17's figures (FAULTLINE_UPDATE_DOCS=1 rewrites them)");
    }
}

/// Each storm scenario's policies and the one setting each differs in from `synchronised`.
const STORMS: [(&str, &str); 2] = [("subscribe", "a2a-subscribe-storm"), ("poll", "a2a-poll-storm")];
const STORM_POLICIES: [(&str, &str); 3] = [
    ("synchronised", "(no jitter, `find`)"),
    ("jittered", "`jitter = \"full\"`"),
    ("resend", "`on_send_timeout = \"resend\"`"),
];

/// Runs one storm scenario, every policy; its summaries by policy.
fn storm_run(file: &str) -> Vec<(String, Summary)> {
    let dir = std::env::temp_dir().join(format!("faultline-readme-{file}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("run")
        .arg(Path::new(ROOT).join(format!("scenarios/{file}.toml")))
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{file}: {}", String::from_utf8_lossy(&o.stderr));
    // A storm has the policies its file has (the poll storm has no `resend`: no create of its
    // times out, so it would equal `synchronised`).
    let out = STORM_POLICIES
        .iter()
        .filter(|(p, _)| dir.join(p).join("summary.json").exists())
        .map(|(p, _)| (p.to_string(), Summary::read(&dir.join(p).join("summary.json"))))
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

/// Both storms' policies side by side: the peaks after and inside the outage, the queue's
/// drain, duplicates and orphans, and the requests the clients made.
fn storm_table(storms: &[(&str, Vec<(String, Summary)>)]) -> String {
    use Style::Plain;
    let agent = |m: &str| format!("dependency.research_agent.{m}");
    let columns: [(&str, String, Style); 6] = [
        ("peak after the outage", agent("recovery_peak_ratio"), Plain(2)),
        ("peak inside the outage", agent("fault_peak_ratio"), Plain(2)),
        ("queue drain (s)", agent("recovery_drain_s"), Plain(1)),
        ("duplicate tasks", "task_duplicate_total".into(), Plain(2)),
        ("orphan tasks", "orphan_task_total".into(), Plain(2)),
        ("get, subscribe, find, cancel requests", agent("control_request_total"), Plain(0)),
    ];
    let mut t = String::from("| storm | policy | differs from `synchronised` in |");
    for (label, _, _) in &columns {
        t += &format!(" {label} |");
    }
    t += "\n|---|---|---|";
    t += &"---|".repeat(columns.len());
    t += "\n";
    for (storm, policies) in storms {
        for (policy, s) in policies {
            let differs = STORM_POLICIES.iter().find(|(p, _)| p == policy).map_or("", |(_, d)| d);
            t += &format!("| {storm} | `{policy}` | {differs} |");
            for (_, metric, style) in &columns {
                t += &format!(" {} |", figure(s, metric, *style));
            }
            t += "\n";
        }
    }
    t
}

#[test]
fn readme_storm_table_is_what_both_storm_scenarios_give() {
    let storms: Vec<(&str, Vec<(String, Summary)>)> =
        STORMS.iter().map(|(storm, file)| (*storm, storm_run(file))).collect();
    let table = storm_table(&storms);
    let path = Path::new(ROOT).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = between(&readme, "storms");
    if std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some() {
        readme.replace_range(start..end, &table);
        std::fs::write(&path, readme).unwrap();
    } else {
        assert_eq!(&readme[start..end], table, "README's storm table (FAULTLINE_UPDATE_DOCS=1 rewrites it)");
    }
}

#[test]
fn numbers_are_grouped_as_readme_writes_them() {
    assert_eq!(number(7123.25, 0), "7 123");
    assert_eq!(number(85731.64, 0), "85 732");
    assert_eq!(number(1234.5, 1), "1 234.5");
    assert_eq!(number(0.0289, 4), "0.0289");
    assert_eq!(number(-12345.0, 0), "-12 345");
}

/// A policy, its summary and its mean model-primary queue during the incident.
type LoadRow = (String, Summary, f64);

/// The incident, open (scenarios/meeting-analysis-incident.toml) or with a closed population
/// (scenarios/meeting-analysis-incident-closed.toml): each policy's summary and its mean
/// model-primary queue over the windows inside the faults (600 s to 1800 s).
fn load_run(file: &str) -> Vec<LoadRow> {
    let dir = std::env::temp_dir().join(format!("faultline-readme-{file}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("run")
        .arg(Path::new(ROOT).join(format!("scenarios/{file}.toml")))
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{file}: {}", String::from_utf8_lossy(&o.stderr));
    let out = ["naive", "resilient"]
        .iter()
        .map(|p| {
            let (h, rows) = series(&dir.join(p).join("timeseries.csv"));
            let (start, queue) = (column(&h, "window_start_s"), column(&h, "dependency.model-primary.queue_depth"));
            let inside: Vec<f64> =
                rows.iter().filter(|r| (600.0..1800.0).contains(&r[start])).map(|r| r[queue]).collect();
            let queue_mean = inside.iter().sum::<f64>() / inside.len() as f64;
            (p.to_string(), Summary::read(&dir.join(p).join("summary.json")), queue_mean)
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

/// The storm open and closed, side by side.
fn load_table(loads: &[(&str, Vec<LoadRow>)]) -> String {
    use Style::*;
    let mut t = String::from(
        "| load | policy | runs started during the incident | retry amplification | deadline misses | model-primary queue (mean) | runs given up on |\n|---|---|---|---|---|---|---|\n",
    );
    for (load, policies) in loads {
        for (policy, s, queue) in policies {
            let abandoned = if s.0["metrics"].get("abandoned_run_total").is_some() {
                figure(s, "abandoned_run_total", Plain(0))
            } else {
                "—".to_string()
            };
            t += &format!(
                "| {load} | `{policy}` | {} | {} | {} | {} | {abandoned} |\n",
                figure(s, "incident.logical_run_total", Plain(0)),
                figure(s, "incident.retry_amplification_ratio", Plain(2)),
                figure(s, "incident.deadline_exceeded_ratio", Percent(1)),
                number(*queue, 0),
            );
        }
    }
    t
}

#[test]
fn readme_load_table_is_what_the_open_and_closed_incidents_give() {
    let loads = [
        ("open, 15 runs/s", load_run("meeting-analysis-incident")),
        ("closed, 900 users", load_run("meeting-analysis-incident-closed")),
    ];
    let table = load_table(&loads);
    let path = Path::new(ROOT).join("README.md");
    let mut readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = between(&readme, "loads");
    if std::env::var_os("FAULTLINE_UPDATE_DOCS").is_some() {
        readme.replace_range(start..end, &table);
        std::fs::write(&path, readme).unwrap();
    } else {
        assert_eq!(&readme[start..end], table, "README's open/closed table (FAULTLINE_UPDATE_DOCS=1 rewrites it)");
    }
}
