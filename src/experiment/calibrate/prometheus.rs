//! Latency histograms in the Prometheus text format (`X_bucket{le="..."} count` series, as
//! `/metrics` or `promtool` print them), for dependencies whose latency a team measures there
//! rather than in traces.

use crate::experiment::command::CommandError;
use crate::scenario::input_file::next_line;
use crate::scenario::{InputKind, open_input, quote};
use std::collections::BTreeMap;

/// Label names that name a callee, in the order they are tried (OpenTelemetry's attributes as
/// the Prometheus exporter spells them, then common conventions).
pub const CALLEE_LABELS: [&str; 7] =
    ["gen_ai_request_model", "server_address", "rpc_service", "peer_service", "model", "service", "dependency"];

/// One histogram series: its name without `_bucket`, its labels without `le`, and its buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub metric: String,
    pub labels: BTreeMap<String, String>,
    /// (upper bound in the metric's unit, cumulative count), ascending, +Inf last.
    pub buckets: Vec<(f64, f64)>,
}

impl Histogram {
    /// Milliseconds per unit of the bounds: Prometheus names carry their unit (`_seconds` is
    /// the convention; `_milliseconds` and `_ms` are common).
    pub fn ms_per_unit(&self) -> f64 {
        if self.metric.ends_with("_milliseconds") || self.metric.ends_with("_ms") { 1.0 } else { 1000.0 }
    }

    /// The callee the series measures: the first naming label present, else the metric name.
    pub fn callee(&self) -> String {
        CALLEE_LABELS.iter().find_map(|l| self.labels.get(*l).cloned()).unwrap_or_else(|| self.metric.clone())
    }

    pub fn total(&self) -> f64 {
        self.buckets.last().map_or(0.0, |b| b.1)
    }

    /// The series as `le_ms` and `cumulative_counts` (one more: the total): the bounds that are
    /// finite and > 0 in ms, strictly ascending (two bounds that are one in ms keep the larger
    /// count).
    pub fn as_scenario_buckets(&self) -> (Vec<f64>, Vec<f64>) {
        let scale = self.ms_per_unit();
        let mut le: Vec<f64> = Vec::new();
        let mut counts: Vec<f64> = Vec::new();
        for &(bound, count) in &self.buckets {
            let ms = bound * scale;
            if !(ms.is_finite() && ms > 0.0) {
                continue;
            }
            if le.last() == Some(&ms) {
                *counts.last_mut().expect("a count per bound") = count;
            } else {
                le.push(ms);
                counts.push(count);
            }
        }
        counts.push(self.total());
        (le, counts)
    }

    /// The quantile p in ms as the scenario draws it (`world/dist.rs`): uniform within a
    /// bucket; in the +Inf bucket an exponential tail whose mean is the last finite bucket's width.
    pub fn quantile_ms(&self, p: f64) -> f64 {
        let (le, counts) = self.as_scenario_buckets();
        let total = self.total();
        let target = p * total;
        let mut lower = (0.0, 0.0);
        for (bound, count) in le.iter().zip(&counts) {
            if *count >= target {
                let width = count - lower.1;
                let share = if width > 0.0 { (target - lower.1) / width } else { 0.0 };
                return lower.0 + share * (bound - lower.0);
            }
            lower = (*bound, *count);
        }
        let last_width = match le.len() {
            0 => 0.0,
            1 => le[0],
            n => le[n - 1] - le[n - 2],
        };
        let q_last = lower.1 / total;
        lower.0 + last_width * ((1.0 - q_last) / (1.0 - p).max(1e-12)).ln()
    }
}

/// A series: its metric name and its labels without `le`.
type SeriesKey = (String, Vec<(String, String)>);

/// One `_bucket` sample as read: its bound, its count, and where it was (the file as shown,
/// the line), so that a refusal of the series names them.
#[derive(Debug, Clone)]
struct BucketSample {
    le: f64,
    count: f64,
    file: usize,
    line: usize,
}

type Series = BTreeMap<SeriesKey, Vec<BucketSample>>;

/// A Prometheus text file larger than this is refused unread (a scrape of a whole server is a
/// few MiB; a histogram needs a few lines).
pub const PROMETHEUS_FILES: InputKind =
    InputKind { plural: "Prometheus text files", max_bytes: 256 << 20, advice: "keep the histograms' `_bucket` lines" };
/// One line of a Prometheus text file.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// Every `_bucket` series in the files, grouped by name and labels; series of one callee with
/// the same bounds are added up later by the caller.
pub fn read_histograms(paths: &[std::path::PathBuf]) -> Result<Vec<Histogram>, CommandError> {
    let mut series: Series = BTreeMap::new();
    let mut files = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let shown = quote(&path.display().to_string());
        let file = open_input(path, PROMETHEUS_FILES).map_err(|r| CommandError::Input(format!("{shown}: {r}")))?;
        read_series(&shown, index, std::io::BufReader::new(file), &mut series)?;
        files.push(shown);
    }
    histograms(series, &files)
}

/// The histograms of one Prometheus text, from memory; `shown` names it in errors.
pub fn histograms_from(shown: &str, bytes: &[u8]) -> Result<Vec<Histogram>, CommandError> {
    let mut series = BTreeMap::new();
    read_series(shown, 0, bytes, &mut series)?;
    histograms(series, &[shown.to_string()])
}

/// Reads the `_bucket` samples of one file, line by line (no line longer than
/// [`MAX_LINE_BYTES`]), into `series`.
fn read_series(
    shown: &str,
    file: usize,
    mut reader: impl std::io::BufRead,
    series: &mut Series,
) -> Result<(), CommandError> {
    let mut i = 0;
    while let Some(raw) = next_line(&mut reader, MAX_LINE_BYTES) {
        i += 1;
        let raw =
            raw.map_err(|e| CommandError::Input(format!("{shown}, line {i}: {e}: not a Prometheus text file")))?;
        let line = std::str::from_utf8(&raw)
            .map_err(|_| CommandError::Input(format!("{shown}, line {i}: not UTF-8 text")))?
            .trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, labels, value) =
            parse_sample(line).map_err(|m| CommandError::Input(format!("{shown}, line {i}: {m}")))?;
        let Some(metric) = name.strip_suffix("_bucket") else { continue };
        let mut labels = labels;
        let Some(le) = labels.remove("le") else {
            return Err(CommandError::Input(format!("{shown}, line {i}: a _bucket sample without `le`")));
        };
        let le: f64 = parse_value(&le)
            .ok_or_else(|| CommandError::Input(format!("{shown}, line {i}: le={} is not a number", quote(&le))))?;
        let sample = BucketSample { le, count: value, file, line: i };
        series.entry((metric.to_string(), labels.into_iter().collect())).or_default().push(sample);
    }
    Ok(())
}

/// The series read, each checked as a histogram; a refusal names the series, and the file and
/// line of the bucket at fault (`files` are the files as shown, by index).
fn histograms(series: Series, files: &[String]) -> Result<Vec<Histogram>, CommandError> {
    let mut histograms = Vec::new();
    for ((metric, labels), mut buckets) in series {
        buckets.sort_by(|a, b| a.le.total_cmp(&b.le));
        let shown = quote(&format!(
            "{metric}{{{}}}",
            labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect::<Vec<_>>().join(",")
        ));
        let at = |b: &BucketSample| format!("{}, line {}", files[b.file], b.line);
        let last = buckets.last().expect("a series holds the sample that made it");
        if last.le != f64::INFINITY {
            return Err(CommandError::Input(format!(
                "{}: histogram {shown} has no le=\"+Inf\" bucket (its last bucket is le={})",
                at(last),
                last.le
            )));
        }
        if let Some(b) = buckets.iter().find(|b| b.le.is_nan() || !b.count.is_finite() || b.count < 0.0) {
            return Err(CommandError::Input(format!(
                "{}: histogram {shown}: the bucket le={} holds {}; a bucket's count is a number of observations, 0 or more",
                at(b),
                b.le,
                b.count
            )));
        }
        if let Some(w) = buckets.windows(2).find(|w| w[1].le == w[0].le) {
            return Err(CommandError::Input(format!(
                "histogram {shown}: the bucket le={} appears twice ({} and {}): the same series read twice (two scrapes, or one file given twice?); give each series once",
                w[0].le,
                at(&w[0]),
                at(&w[1])
            )));
        }
        if let Some(w) = buckets.windows(2).find(|w| w[1].count < w[0].count) {
            return Err(CommandError::Input(format!(
                "{}: histogram {shown}: the bucket le={} counts {}, fewer than the {} of le={} ({}); cumulative counts never decrease as le grows",
                at(&w[1]),
                w[1].le,
                w[1].count,
                w[0].count,
                w[0].le,
                at(&w[0])
            )));
        }
        let buckets = buckets.into_iter().map(|b| (b.le, b.count)).collect();
        histograms.push(Histogram { metric, labels: labels.into_iter().collect(), buckets });
    }
    Ok(histograms)
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        other => other.parse().ok(),
    }
}

/// `name{a="x",b="y"} value [timestamp]` as (name, labels, value).
fn parse_sample(line: &str) -> Result<(String, BTreeMap<String, String>, f64), String> {
    let name_end = line.find(['{', ' ', '\t']).ok_or("a sample needs a name and a value")?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next().ok_or("a sample needs a value")?;
    let value = parse_value(value).ok_or_else(|| format!("{} is not a number", quote(value)))?;
    Ok((name, labels, value))
}

/// The labels up to the closing `}`, and the text after it.
fn parse_labels(mut s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(after) = s.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = s.find('=').ok_or("a label needs `=`")?;
        let key = s[..eq].trim().to_string();
        let quoted = s[eq + 1..].trim_start().strip_prefix('"').ok_or("label values are quoted")?;
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("an unfinished escape in a label value".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err("an unclosed label value".into()),
            }
        };
        labels.insert(key, value);
        s = &quoted[end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_read_as_the_scenario_takes_them() {
        let dir = std::env::temp_dir().join(format!("faultline-prom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.prom");
        std::fs::write(
            &file,
            "# HELP gen_ai_client_operation_duration_seconds x\n\
             gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"gpt-4o\",le=\"0.5\"} 10\n\
             gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"gpt-4o\",le=\"+Inf\"} 40\n\
             gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"gpt-4o\",le=\"1\"} 30 1700000000000\n\
             gen_ai_client_operation_duration_seconds_sum{gen_ai_request_model=\"gpt-4o\"} 31.5\n",
        )
        .unwrap();
        let h = read_histograms(&[file]).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].callee(), "gpt-4o");
        assert_eq!(h[0].as_scenario_buckets(), (vec![500.0, 1000.0], vec![10.0, 30.0, 40.0]));
        // Half of all observations: 20 of 40, half way through the (500, 1000] bucket.
        assert_eq!(h[0].quantile_ms(0.5), 750.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn label_values_unescape() {
        let (name, labels, value) = parse_sample(r#"x_bucket{a="q\"uote",le="1"} 3"#).unwrap();
        assert_eq!((name.as_str(), labels["a"].as_str(), value), ("x_bucket", "q\"uote", 3.0));
        assert!(parse_sample("x_bucket{le=1} 3").is_err());
    }
}
