//! `faultline import envoy FILE`: an Envoy v3 configuration (YAML or JSON: a bootstrap with
//! `static_resources.clusters` and the listeners' inline `route_config`, or a bare Cluster,
//! RouteConfiguration or Route) as Envoy reads it (the v1.32+ line; docs/import.md): every
//! cluster's circuit-breaker thresholds (priority DEFAULT) become a bulkhead and an `envoy`
//! retry budget, its `outlier_detection` an `envoy_outlier` guard; one route's `timeout`,
//! `retry_policy` and `hedge_policy` become the policy's timeout, retry and hedging. What the
//! model cannot express is listed under NOT MAPPED with why; what Envoy refuses is refused here
//! at its line and column.

use super::fragment::{Field, Fragment, Table, toml_number};
use super::json::{Json, Node, Pos, parse};
use super::proto_duration::{self, Duration, Reader};
use super::yaml_tree::parse_documents;

/// What the importer is told besides the file.
pub struct EnvoyOptions<'a> {
    /// The file as the user named it (errors), and its own name (comments).
    pub shown: &'a str,
    pub name: &'a str,
    pub policy: &'a str,
    /// `CLUSTER=DEPENDENCY` pairs; a cluster not named guards the dependency of its own name.
    pub dependencies: &'a [(String, String)],
    /// The route whose settings to import (its `name`); default the first route.
    pub route: Option<&'a str>,
}

struct Src<'a> {
    shown: &'a str,
    name: &'a str,
}

impl Src<'_> {
    fn err(&self, pos: Pos, field: &str, msg: impl std::fmt::Display) -> String {
        format!("{}:{}:{}: {field}: {msg}", self.shown, pos.line, pos.col)
    }

    fn from(&self, field: &str, node: &Node) -> String {
        format!("from {field} ({}:{}) = {}", self.name, node.pos.line, node.raw())
    }

    fn at(&self, field: &str, node: &Node) -> String {
        format!("{field} ({}:{}) = {}", self.name, node.pos.line, node.raw())
    }
}

/// A field name as proto3 JSON accepts it: `retryOn` and `retry_on` are one field.
fn snake(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

type Members<'n> = &'n [(String, Node)];

fn object<'n>(src: &Src, field: &str, node: &'n Node) -> Result<Members<'n>, String> {
    match &node.value {
        Json::Object(m) => Ok(m),
        other => Err(src.err(node.pos, field, format!("must be an object, found {}", other.type_name()))),
    }
}

fn array<'n>(src: &Src, field: &str, node: &'n Node) -> Result<&'n [Node], String> {
    match &node.value {
        Json::Array(a) => Ok(a),
        other => Err(src.err(node.pos, field, format!("must be a list, found {}", other.type_name()))),
    }
}

fn string<'n>(src: &Src, field: &str, node: &'n Node) -> Result<&'n str, String> {
    match &node.value {
        Json::String(s) => Ok(s),
        other => Err(src.err(node.pos, field, format!("must be a string, found {}", other.type_name()))),
    }
}

fn boolean(src: &Src, field: &str, node: &Node) -> Result<bool, String> {
    match &node.value {
        Json::Bool(b) => Ok(*b),
        other => Err(src.err(node.pos, field, format!("must be true or false, found {}", other.type_name()))),
    }
}

fn get<'n>(m: Members<'n>, key: &str) -> Option<(&'n str, &'n Node)> {
    m.iter().find(|(k, _)| snake(k) == key).map(|(k, n)| (k.as_str(), n))
}

/// Refuses a member the message does not have, as protobuf's JSON reader refuses it in Envoy's
/// static configuration.
fn known(src: &Src, field: &str, m: Members, keys: &[&str]) -> Result<(), String> {
    for (k, n) in m {
        if !keys.contains(&snake(k).as_str()) {
            return Err(src.err(
                n.pos,
                &format!("{field}.{k}"),
                format!(
                    "unknown field (Envoy refuses it: protobuf's JSON reader finds no such field); expected one of {}",
                    keys.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A `google.protobuf.UInt32Value` (or uint32): a whole number 0 ..= 2^32 - 1, or its text.
fn uint32(src: &Src, field: &str, node: &Node) -> Result<u32, String> {
    let text = match &node.value {
        Json::Number(n) | Json::String(n) => n.as_str(),
        other => return Err(src.err(node.pos, field, format!("must be a whole number, found {}", other.type_name()))),
    };
    text.parse::<u32>().map_err(|_| {
        src.err(node.pos, field, format!("{} is not a uint32 (0 to 4294967295); Envoy refuses it", node.raw()))
    })
}

/// A proto3 JSON Duration (`"1.5s"`) as Envoy reads it: its nanoseconds and the whole
/// milliseconds Envoy keeps (0.0009s is 0 ms); negative ones are refused as Envoy's duration
/// validation refuses them.
fn duration(src: &Src, field: &str, node: &Node) -> Result<Duration, String> {
    proto_duration::read(node, Reader::Envoy).map_err(|msg| src.err(node.pos, field, msg))
}

/// The whole milliseconds Envoy keeps of a duration.
fn duration_ms(src: &Src, field: &str, node: &Node) -> Result<f64, String> {
    Ok(duration(src, field, node)?.ms)
}

/// An `envoy.type.v3.Percent` (`{value: 20.0}`), 0 ..= 100 as its validation rule says.
/// The percentage and the node of its `value` (the node itself when `value` is absent: 0).
fn percent_node<'n>(src: &Src, field: &str, node: &'n Node) -> Result<(f64, &'n Node), String> {
    let m = object(src, field, node)?;
    known(src, field, m, &["value"])?;
    let Some((_, v)) = get(m, "value") else { return Ok((0.0, node)) };
    let x = match &v.value {
        Json::Number(n) | Json::String(n) => n.parse::<f64>().ok(),
        _ => None,
    }
    .ok_or_else(|| src.err(v.pos, &format!("{field}.value"), "must be a number"))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(src.err(v.pos, &format!("{field}.value"), format!("{x} is outside 0 ..= 100 (Envoy refuses it)")));
    }
    Ok((x, v))
}

fn field(key: &str, value: String, comment: String) -> Field {
    Field { key: key.to_string(), value, comment }
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

// ------------------------------------------------------------------ what the file holds

struct Cluster<'n> {
    path: String,
    name: String,
    node: &'n Node,
}

struct Route<'n> {
    path: String,
    name: Option<String>,
    node: &'n Node,
    /// The virtual host's own retry_policy and hedge_policy, which a route without its own
    /// inherits (the route's replaces the virtual host's whole, never merged).
    vhost: Option<(String, &'n Node)>,
}

#[derive(Default)]
struct Found<'n> {
    clusters: Vec<Cluster<'n>>,
    routes: Vec<Route<'n>>,
    not_mapped: Vec<String>,
    shape: &'static str,
}

fn cluster_name(src: &Src, path: &str, node: &Node) -> Result<String, String> {
    let m = object(src, path, node)?;
    match get(m, "name") {
        Some((k, n)) => {
            let s = string(src, &format!("{path}.{k}"), n)?;
            if s.is_empty() {
                return Err(src.err(n.pos, &format!("{path}.{k}"), "must not be empty (Envoy: min_len 1)"));
            }
            Ok(s.to_string())
        }
        None => {
            Err(src.err(node.pos, &format!("{path}.name"), "required: a cluster has a name (Envoy refuses it without)"))
        }
    }
}

fn route_config<'n>(src: &Src, path: &str, node: &'n Node, found: &mut Found<'n>) -> Result<(), String> {
    let m = object(src, path, node)?;
    for (k, v) in m {
        let f = format!("{path}.{k}");
        match snake(k).as_str() {
            "virtual_hosts" => {
                for (i, vh) in array(src, &f, v)?.iter().enumerate() {
                    let vf = format!("{f}[{i}]");
                    let vm = object(src, &vf, vh)?;
                    if let Some((rk, routes)) = get(vm, "routes") {
                        for (j, r) in array(src, &format!("{vf}.{rk}"), routes)?.iter().enumerate() {
                            let rf = format!("{vf}.{rk}[{j}]");
                            let rm = object(src, &rf, r)?;
                            let name = match get(rm, "name") {
                                Some((nk, n)) => Some(string(src, &format!("{rf}.{nk}"), n)?.to_string()),
                                None => None,
                            };
                            found.routes.push(Route { path: rf, name, node: r, vhost: Some((vf.clone(), vh)) });
                        }
                    }
                }
            }
            "name" | "@type" => {}
            _ => found
                .not_mapped
                .push(format!("{}: a route configuration setting faultline does not model", src.at(&f, v))),
        }
    }
    Ok(())
}

fn bootstrap<'n>(src: &Src, m: Members<'n>, found: &mut Found<'n>) -> Result<(), String> {
    for (k, v) in m {
        match snake(k).as_str() {
            "static_resources" => {
                let sm = object(src, k, v)?;
                for (sk, sv) in sm {
                    let f = format!("{k}.{sk}");
                    match snake(sk).as_str() {
                        "clusters" => {
                            for (i, c) in array(src, &f, sv)?.iter().enumerate() {
                                let path = format!("{f}[{i}]");
                                let name = cluster_name(src, &path, c)?;
                                found.clusters.push(Cluster { path, name, node: c });
                            }
                        }
                        "listeners" => {
                            for (i, l) in array(src, &f, sv)?.iter().enumerate() {
                                let lf = format!("{f}[{i}]");
                                listener(src, &lf, l, found)?;
                                found.not_mapped.push(format!(
                                    "{}: a listener is read only for its HTTP connection managers' route_config",
                                    src.at(&lf, l)
                                ));
                            }
                        }
                        _ => found
                            .not_mapped
                            .push(format!("{}: not read (secrets and the rest are not modelled)", src.at(&f, sv))),
                    }
                }
            }
            _ => found
                .not_mapped
                .push(format!("{}: a bootstrap setting outside static_resources; not modelled", src.at(k, v))),
        }
    }
    Ok(())
}

/// A listener's HTTP connection managers with an inline `route_config`; `rds` is dynamic.
fn listener<'n>(src: &Src, path: &str, node: &'n Node, found: &mut Found<'n>) -> Result<(), String> {
    let m = object(src, path, node)?;
    let Some((ck, chains)) = get(m, "filter_chains") else { return Ok(()) };
    for (i, chain) in array(src, &format!("{path}.{ck}"), chains)?.iter().enumerate() {
        let cf = format!("{path}.{ck}[{i}]");
        let Some((fk, filters)) = get(object(src, &cf, chain)?, "filters") else { continue };
        for (j, filter) in array(src, &format!("{cf}.{fk}"), filters)?.iter().enumerate() {
            let ff = format!("{cf}.{fk}[{j}]");
            let Some((tk, typed)) = get(object(src, &ff, filter)?, "typed_config") else { continue };
            let tf = format!("{ff}.{tk}");
            let tm = object(src, &tf, typed)?;
            if let Some((rk, rc)) = get(tm, "route_config") {
                // The key path is long; comments give the file's line, so keep the listener.
                route_config(src, &format!("{path}...{rk}"), rc, found)?;
            }
            if let Some((rk, rds)) = get(tm, "rds") {
                found.not_mapped.push(format!(
                    "{}: routes served by RDS are not in the file; import the RouteConfiguration itself",
                    src.at(&format!("{tf}.{rk}"), rds)
                ));
            }
        }
    }
    Ok(())
}

fn find<'n>(src: &Src, doc: &'n Node) -> Result<Found<'n>, String> {
    let m = object(src, "(file)", doc)?;
    let mut found = Found::default();
    let has = |k: &str| get(m, k).is_some();
    if has("static_resources") {
        found.shape = "bootstrap";
        bootstrap(src, m, &mut found)?;
    } else if has("virtual_hosts") {
        found.shape = "RouteConfiguration";
        route_config(src, "", doc, &mut found)?;
    } else if has("match") {
        found.shape = "Route";
        let name = match get(m, "name") {
            Some((k, n)) => Some(string(src, k, n)?.to_string()),
            None => None,
        };
        found.routes.push(Route { path: String::new(), name, node: doc, vhost: None });
    } else if has("name") {
        found.shape = "Cluster";
        let name = cluster_name(src, "", doc)?;
        found.clusters.push(Cluster { path: String::new(), name, node: doc });
    } else {
        return Err(src.err(
            doc.pos,
            "(file)",
            "not an Envoy configuration this importer reads: expected a bootstrap (static_resources), a RouteConfiguration (virtual_hosts), a Route (match) or a Cluster (name)",
        ));
    }
    if found.clusters.is_empty() && found.routes.is_empty() {
        return Err(src.err(doc.pos, "(file)", "no cluster and no route to import"));
    }
    Ok(found)
}

/// Whether a route has a `route` action (not a redirect, direct_response or other action).
fn forwards(node: &Node) -> bool {
    matches!(&node.value, Json::Object(m) if get(m, "route").is_some())
}

/// `a.b` below a path ("" at the root).
fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

// ------------------------------------------------------------------ clusters

const THRESHOLD_KEYS: [&str; 8] = [
    "priority",
    "max_connections",
    "max_pending_requests",
    "max_requests",
    "max_retries",
    "retry_budget",
    "track_remaining",
    "max_connection_pools",
];

const OUTLIER_KEYS: [&str; 25] = [
    "consecutive_5xx",
    "interval",
    "base_ejection_time",
    "max_ejection_percent",
    "enforcing_consecutive_5xx",
    "enforcing_success_rate",
    "success_rate_minimum_hosts",
    "success_rate_request_volume",
    "success_rate_stdev_factor",
    "consecutive_gateway_failure",
    "enforcing_consecutive_gateway_failure",
    "split_external_local_origin_errors",
    "consecutive_local_origin_failure",
    "enforcing_consecutive_local_origin_failure",
    "enforcing_local_origin_success_rate",
    "failure_percentage_threshold",
    "enforcing_failure_percentage",
    "enforcing_failure_percentage_local_origin",
    "failure_percentage_minimum_hosts",
    "failure_percentage_request_volume",
    "max_ejection_time",
    "max_ejection_time_jitter",
    "successful_active_health_check_uneject_host",
    "monitors",
    "always_eject_one_host",
];

/// The route timeout the bulkhead's wait is bounded by (ms; 0 = none), and where it came from.
struct Wait {
    ms: f64,
    why: String,
}

fn map_cluster(
    src: &Src,
    c: &Cluster,
    dependency: &str,
    wait: &Wait,
    policy: &str,
    tables: &mut Vec<Table>,
    not_mapped: &mut Vec<String>,
) -> Result<(), String> {
    let m = object(src, &c.path, c.node)?;
    let p = |k: &str| join(&c.path, k);
    // Envoy's defaults (upstream_impl.cc ResourceManagers::load): 1024, 1024, 1024, 3.
    let mut max_requests = (1024u32, "Envoy's default max_requests (circuit_breakers absent or silent)".to_string());
    let mut max_retries = (3u32, "Envoy's default max_retries (circuit_breakers absent or silent)".to_string());
    let mut budget: Option<(f64, u32, String, String)> = None;
    let mut hosts = 0usize;
    let mut panic = (50.0, "Envoy's default healthy_panic_threshold (common_lb_config)".to_string());
    let mut outlier = None;
    for (k, v) in m {
        let f = p(k);
        match snake(k).as_str() {
            "name" | "@type" => {}
            "circuit_breakers" => {
                let cm = object(src, &f, v)?;
                known(src, &f, cm, &["thresholds", "per_host_thresholds"])?;
                if let Some((pk, ph)) = get(cm, "per_host_thresholds") {
                    not_mapped.push(format!(
                        "{}: per-host limits (max_connections per host) are not modelled",
                        src.at(&format!("{f}.{pk}"), ph)
                    ));
                }
                let mut seen_default = false;
                if let Some((tk, ts)) = get(cm, "thresholds") {
                    for (i, t) in array(src, &format!("{f}.{tk}"), ts)?.iter().enumerate() {
                        let tf = format!("{f}.{tk}[{i}]");
                        let tm = object(src, &tf, t)?;
                        known(src, &tf, tm, &THRESHOLD_KEYS)?;
                        let priority = match get(tm, "priority") {
                            None => "DEFAULT",
                            Some((pk, pn)) => match &pn.value {
                                Json::String(s) if s == "DEFAULT" => "DEFAULT",
                                Json::String(s) if s == "HIGH" => "HIGH",
                                Json::Number(n) if n == "0" => "DEFAULT",
                                Json::Number(n) if n == "1" => "HIGH",
                                _ => {
                                    return Err(src.err(
                                        pn.pos,
                                        &format!("{tf}.{pk}"),
                                        format!(
                                            "{} is not a RoutingPriority (DEFAULT or HIGH); Envoy refuses it",
                                            pn.raw()
                                        ),
                                    ));
                                }
                            },
                        };
                        // Validate every value even where it is not mapped, as Envoy loads them.
                        for key in [
                            "max_connections",
                            "max_pending_requests",
                            "max_requests",
                            "max_retries",
                            "max_connection_pools",
                        ] {
                            if let Some((kk, kn)) = get(tm, key) {
                                uint32(src, &format!("{tf}.{kk}"), kn)?;
                            }
                        }
                        let rb = match get(tm, "retry_budget") {
                            Some((bk, bn)) => {
                                let bf = format!("{tf}.{bk}");
                                let bm = object(src, &bf, bn)?;
                                known(src, &bf, bm, &["budget_percent", "min_retry_concurrency"])?;
                                let pct = match get(bm, "budget_percent") {
                                    Some((pk, pn)) => {
                                        let (x, vn) = percent_node(src, &format!("{bf}.{pk}"), pn)?;
                                        (x, src.from(&format!("{bf}.{pk}.value"), vn))
                                    }
                                    None => (20.0, "Envoy's default budget_percent (20 %)".to_string()),
                                };
                                let min = match get(bm, "min_retry_concurrency") {
                                    Some((mk, mn)) => {
                                        (uint32(src, &format!("{bf}.{mk}"), mn)?, src.from(&format!("{bf}.{mk}"), mn))
                                    }
                                    None => (3, "Envoy's default min_retry_concurrency".to_string()),
                                };
                                Some((pct.0, min.0, pct.1, min.1))
                            }
                            None => None,
                        };
                        if priority == "HIGH" {
                            not_mapped.push(format!(
                                "{}: the HIGH priority's thresholds apply to routes with priority HIGH; faultline's attempts have no routing priority",
                                src.at(&tf, t)
                            ));
                            continue;
                        }
                        if seen_default {
                            not_mapped.push(format!(
                                "{}: a second DEFAULT threshold; Envoy uses the first (ResourceManagers::load, std::find_if)",
                                src.at(&tf, t)
                            ));
                            continue;
                        }
                        seen_default = true;
                        if let Some((kk, kn)) = get(tm, "max_requests") {
                            max_requests =
                                (uint32(src, &format!("{tf}.{kk}"), kn)?, src.from(&format!("{tf}.{kk}"), kn));
                        }
                        if let Some((kk, kn)) = get(tm, "max_retries") {
                            let n = uint32(src, &format!("{tf}.{kk}"), kn)?;
                            if rb.is_some() {
                                not_mapped.push(format!(
                                    "{}: retry_budget is set, and Envoy then ignores max_retries",
                                    src.at(&format!("{tf}.{kk}"), kn)
                                ));
                            } else {
                                max_retries = (n, src.from(&format!("{tf}.{kk}"), kn));
                            }
                        }
                        budget = rb;
                        for key in
                            ["max_connections", "max_pending_requests", "track_remaining", "max_connection_pools"]
                        {
                            if let Some((kk, kn)) = get(tm, key) {
                                let why = match key {
                                    "max_connections" => {
                                        "faultline models no connections: the bulkhead limits requests (max_requests)"
                                    }
                                    "max_pending_requests" => {
                                        "faultline's bulkhead queue has no length bound: a request Envoy would refuse at once (503, upstream_rq_pending_overflow) waits here until max_wait_ms"
                                    }
                                    _ => "not a limit on requests",
                                };
                                not_mapped.push(format!("{}: {why}", src.at(&format!("{tf}.{kk}"), kn)));
                            }
                        }
                    }
                }
            }
            "outlier_detection" => outlier = Some((f, v)),
            "common_lb_config" => {
                let lm = object(src, &f, v)?;
                for (lk, lv) in lm {
                    if snake(lk) == "healthy_panic_threshold" {
                        let pf = format!("{f}.{lk}");
                        let (x, vn) = percent_node(src, &pf, lv)?;
                        panic = (x, src.from(&format!("{pf}.value"), vn));
                    } else {
                        not_mapped
                            .push(format!("{}: load balancing is not modelled", src.at(&format!("{f}.{lk}"), lv)));
                    }
                }
            }
            "load_assignment" => {
                hosts = count_hosts(v);
                not_mapped.push(format!(
                    "{}: {hosts} host(s); faultline's dependency is one station (its servers and queue in the scenario), so the endpoints are not read",
                    src.at(&f, v)
                ));
            }
            _ => not_mapped.push(format!("{}: a cluster setting faultline does not model", src.at(&f, v))),
        }
    }
    let label = if c.path.is_empty() { "the cluster".to_string() } else { c.path.clone() };
    // The bulkhead: max_requests, and a request waits until the route timeout.
    let mut fields = vec![
        field("dependency", quote(dependency), format!("cluster {} ({label})", c.name)),
        field("max_concurrent_calls", max_requests.0.max(1).to_string(), max_requests.1.clone()),
    ];
    if max_requests.0 == 0 {
        not_mapped.push(format!("{label}.circuit_breakers max_requests = 0: Envoy then refuses every request; faultline's bulkhead has at least 1 permit"));
    }
    fields.push(field("max_wait_ms", toml_number(wait.ms), wait.why.clone()));
    tables.push(Table { header: format!("[[policy.{policy}.bulkhead]]"), fields });
    // The retry limit: max_retries as an envoy budget at 0 % (the floor is the limit), or the budget.
    let fields = match &budget {
        Some((pct, min, pw, mw)) => vec![
            field("kind", "\"envoy\"".into(), "retry_budget (circuit_breakers, DEFAULT priority)".into()),
            field("dependency", quote(dependency), format!("cluster {}", c.name)),
            field("budget_percent", toml_number(*pct), pw.clone()),
            field("min_retry_concurrency", min.to_string(), mw.clone()),
        ],
        None => vec![
            field("kind", "\"envoy\"".into(), "max_retries: concurrent retries the cluster allows".into()),
            field("dependency", quote(dependency), format!("cluster {}", c.name)),
            field("budget_percent", "0".into(), "no retry_budget: the limit is max_retries alone".into()),
            field("min_retry_concurrency", max_retries.0.to_string(), max_retries.1.clone()),
        ],
    };
    tables.push(Table { header: format!("[[policy.{policy}.retry_budget]]"), fields });
    not_mapped.push(format!(
        "{label} ({}): Envoy takes a retry slot when it decides to retry and holds it through the backoff until the retry's answer (retry_state_impl.cc shouldRetry: retries().inc() before enableBackoffTimer, dec in resetRetry); faultline's envoy budget takes it when the retry is sent, so fewer retries overflow here (200 calls a second all answered 503, num_retries 3, max_retries 3, 1 ms service: 662 of about 35 000 retries refused, 1.9 %, 3.89 attempts a call; in Envoy about 18 Erlangs of slot time, backoffs of 12.5, 25 and 50 ms on average, compete for 3 slots and most retries overflow)",
        if budget.is_some() { "retry_budget" } else { "max_retries" }
    ));
    if let Some((f, v)) = outlier {
        map_outlier(src, &f, v, dependency, &c.name, panic, hosts, policy, tables, not_mapped)?;
    }
    Ok(())
}

fn count_hosts(node: &Node) -> usize {
    let Json::Object(m) = &node.value else { return 0 };
    let Some((_, Node { value: Json::Array(eps), .. })) = get(m, "endpoints") else { return 0 };
    eps.iter()
        .map(|e| match &e.value {
            Json::Object(em) => match get(em, "lb_endpoints") {
                Some((_, Node { value: Json::Array(l), .. })) => l.len(),
                _ => 0,
            },
            _ => 0,
        })
        .sum()
}

#[allow(clippy::too_many_arguments)]
fn map_outlier(
    src: &Src,
    f: &str,
    node: &Node,
    dependency: &str,
    cluster: &str,
    panic: (f64, String),
    hosts: usize,
    policy: &str,
    tables: &mut Vec<Table>,
    not_mapped: &mut Vec<String>,
) -> Result<(), String> {
    let m = object(src, f, node)?;
    known(src, f, m, &OUTLIER_KEYS)?;
    let mut fields = vec![
        field("kind", "\"envoy_outlier\"".into(), format!("{f} (Envoy's outlier detection, one host)")),
        field("dependency", quote(dependency), format!("cluster {cluster}")),
    ];
    let mut base_ms = 30_000.0;
    let mut max_ms = None;
    for (k, v) in m {
        let kf = format!("{f}.{k}");
        let key = snake(k);
        match key.as_str() {
            "consecutive_5xx" | "consecutive_gateway_failure" => {
                fields.push(field(&key, uint32(src, &kf, v)?.to_string(), src.from(&kf, v)));
            }
            "enforcing_consecutive_5xx" | "enforcing_consecutive_gateway_failure" | "max_ejection_percent" => {
                // outlier_detection.proto: `(validate.rules).uint32 = {lte: 100}` on all three.
                let n = uint32(src, &kf, v)?;
                if n > 100 {
                    return Err(src.err(v.pos, &kf, format!("{n} is over 100 (Envoy: lte 100)")));
                }
                fields.push(field(&key, n.to_string(), src.from(&kf, v)));
            }
            "interval" | "base_ejection_time" | "max_ejection_time" => {
                let d = duration(src, &kf, v)?;
                if d.nanos == 0 {
                    return Err(src.err(v.pos, &kf, "must be greater than 0 (Envoy: gt 0s)"));
                }
                // Envoy keeps whole milliseconds (DetectorConfig, PROTOBUF_GET_MS_OR_DEFAULT): a
                // positive duration under 1 ms is 0 ms there. The guard's least is 1 ms.
                let ms = d.ms;
                if key == "base_ejection_time" {
                    base_ms = ms;
                }
                if key == "max_ejection_time" {
                    max_ms = Some((ms, v));
                }
                if ms == 0.0 {
                    let what = if key == "interval" {
                        "Envoy arms its sweep timer for 0 ms, so it sweeps at every turn of its event loop"
                    } else {
                        "Envoy ejects for 0 ms, so the host returns at the next sweep"
                    };
                    not_mapped.push(format!("{}: under 1 ms, which Envoy reads as 0 ms (whole milliseconds); {what}; written as 1 ms, the guard's least", src.at(&kf, v)));
                }
                fields.push(field(&format!("{key}_ms"), toml_number(ms.max(1.0)), src.from(&kf, v)));
            }
            "always_eject_one_host" => {
                fields.push(field(&key, boolean(src, &kf, v)?.to_string(), src.from(&kf, v)));
            }
            "max_ejection_time_jitter" => {
                let ms = duration_ms(src, &kf, v)?;
                if ms > 0.0 {
                    not_mapped.push(format!(
                        "{}: Envoy adds random % (jitter + 1) ms to each ejection; the guard ejects for the exact time",
                        src.at(&kf, v)
                    ));
                }
            }
            "split_external_local_origin_errors" => {
                if boolean(src, &kf, v)? {
                    not_mapped.push(format!("{}: local-origin errors (timeouts, resets) counted apart; the guard counts them as gateway errors (504, 503) as Envoy does when this is false", src.at(&kf, v)));
                }
            }
            "successful_active_health_check_uneject_host" => {
                not_mapped.push(format!("{}: active health checking is not modelled", src.at(&kf, v)));
            }
            _ => {
                // Validate the numbers Envoy validates, then say why the detector is not mapped.
                if key.starts_with("enforcing") || key.ends_with("threshold") {
                    let n = uint32(src, &kf, v)?;
                    if n > 100 {
                        return Err(src.err(v.pos, &kf, format!("{n} is over 100 (Envoy: lte 100)")));
                    }
                }
                let why = if key.starts_with("success_rate")
                    || key == "enforcing_success_rate"
                    || key == "enforcing_local_origin_success_rate"
                {
                    "the success-rate detector compares hosts with each other's mean and deviation at each sweep; with one station there is no other host (and Envoy needs success_rate_minimum_hosts, 5 by default)"
                } else if key.contains("failure_percentage") {
                    "the failure-percentage detector is not modelled: at each sweep Envoy ejects a host whose failed share of the interval's requests is at least failure_percentage_threshold (85 %), once it had failure_percentage_request_volume (50) requests and the cluster has failure_percentage_minimum_hosts (5) hosts with that volume; the threshold is absolute, so with failure_percentage_minimum_hosts 1 or 0 it ejects a one-host cluster too (enforcing_failure_percentage, 0 by default, is the chance it does)"
                } else if key.contains("local_origin") {
                    "the local-origin detectors act only with split_external_local_origin_errors"
                } else {
                    "outlier detection extensions are not modelled"
                };
                not_mapped.push(format!("{}: {why}", src.at(&kf, v)));
            }
        }
    }
    if let Some((ms, v)) = max_ms
        && ms < base_ms
    {
        return Err(src.err(
            v.pos,
            &format!("{f}.max_ejection_time"),
            "outlier detector's max_ejection_time cannot be smaller than base_ejection_time (Envoy refuses the cluster)",
        ));
    }
    fields.push(field("healthy_panic_threshold", toml_number(panic.0), panic.1));
    tables.push(Table { header: format!("[[policy.{policy}.circuit_breaker]]"), fields });
    not_mapped.push(format!(
        "{f} (cluster {cluster}): faultline models the cluster as one host (the station){}; Envoy ejects a host only while 100 x (ejected + 1) / hosts <= max_ejection_percent (or always_eject_one_host for the first), and an ejected host's traffic goes to the others; here an ejection refuses every attempt, and only when healthy_panic_threshold is 0 (below it Envoy routes to ejected hosts)",
        if hosts > 1 { format!(", where the file has {hosts}") } else { String::new() }
    ));
    Ok(())
}

// ------------------------------------------------------------------ the route

const RETRY_KEYS: [&str; 13] = [
    "retry_on",
    "num_retries",
    "per_try_timeout",
    "per_try_idle_timeout",
    "retry_priority",
    "retry_host_predicate",
    "retry_options_predicates",
    "host_selection_retry_max_attempts",
    "retriable_status_codes",
    "retry_back_off",
    "rate_limited_retry_back_off",
    "retriable_headers",
    "retriable_request_headers",
];

/// faultline's retryable kinds, in `retry_on`'s order.
const KIND_ORDER: [&str; 3] = ["RATE_LIMITED", "OVERLOADED", "TRANSIENT_TRANSPORT"];

/// What one `retry_on` condition retries in faultline's kinds, or why nothing.
fn condition(c: &str) -> Result<&'static [&'static str], &'static str> {
    match c {
        "5xx" => Ok(&["OVERLOADED", "TRANSIENT_TRANSPORT"]),
        "gateway-error" => Ok(&["OVERLOADED", "TRANSIENT_TRANSPORT"]),
        "reset" | "connect-failure" | "refused-stream" => Ok(&["TRANSIENT_TRANSPORT"]),
        "unavailable" => Ok(&["OVERLOADED", "TRANSIENT_TRANSPORT"]),
        "resource-exhausted" => Ok(&["RATE_LIMITED"]),
        "deadline-exceeded" => Ok(&["TRANSIENT_TRANSPORT"]),
        "retriable-4xx" => Err("retries 409 only; faultline has no conflict kind"),
        "retriable-headers" => Err("retries on response headers; faultline's answers carry none"),
        "envoy-ratelimited" => Err(
            "retries answers with x-envoy-ratelimited; faultline's RATE_LIMITED is a 429, retried only through retriable-status-codes",
        ),
        "cancelled" | "internal" => {
            Err("gRPC CANCELLED and INTERNAL are CANCELED and PERMANENT_PROVIDER here, which faultline never retries")
        }
        "http3-post-connect-failure" | "reset-before-request" => Err("a connection detail faultline does not model"),
        "retriable-status-codes" => Ok(&[]),
        _ => Err(
            "not a retry_on condition Envoy knows; Envoy ignores it (RetryPolicyImpl keeps only parseRetryOn's flags)",
        ),
    }
}

/// What a retriable status code retries in faultline's kinds.
fn status_kind(code: u32) -> Result<&'static str, &'static str> {
    match code {
        429 => Ok("RATE_LIMITED"),
        503 => Ok("OVERLOADED"),
        502 | 504 => Ok("TRANSIENT_TRANSPORT"),
        500 => Err("a 500 is PERMANENT_PROVIDER here, which faultline never retries"),
        _ => Err("no faultline failure kind answers with this status"),
    }
}

struct RouteOut {
    fields: Vec<Field>,
    retry: Vec<Field>,
    backoff: Vec<Field>,
    /// The route timeout in ms (0 = none) and why, for the bulkhead's wait.
    wait: Wait,
}

fn map_route(src: &Src, r: &Route, not_mapped: &mut Vec<String>) -> Result<RouteOut, String> {
    let m = object(src, &r.path, r.node)?;
    if get(m, "match").is_none() {
        return Err(src.err(
            r.node.pos,
            &join(&r.path, "match"),
            "required: a route has a match (Envoy refuses it without)",
        ));
    }
    let mut action = None;
    for (k, v) in m {
        match snake(k).as_str() {
            "route" => action = Some((join(&r.path, k), v)),
            "match" | "name" | "@type" => {}
            _ => not_mapped.push(format!("{}: a route setting faultline does not model", src.at(&join(&r.path, k), v))),
        }
    }
    let mut out = RouteOut {
        fields: Vec::new(),
        retry: Vec::new(),
        backoff: Vec::new(),
        wait: Wait {
            ms: 15_000.0,
            why: "Envoy's default route timeout (15 s): a pending request waits at most that long".into(),
        },
    };
    let Some((af, action)) = action else {
        not_mapped.push(format!(
            "{}: the route has no route action (a redirect or a direct response): nothing to call",
            src.at(&r.path, r.node)
        ));
        out.retry.push(field(
            "max_attempts",
            "1".into(),
            "the route calls no upstream (no route action), so nothing is retried".into(),
        ));
        return Ok(out);
    };
    let am = object(src, &af, action)?;
    let mut retry_policy = None;
    let mut hedge_policy = None;
    let mut timeout = (15_000.0, "Envoy's default route timeout, 15 s".to_string());
    for (k, v) in am {
        let f = format!("{af}.{k}");
        match snake(k).as_str() {
            "timeout" => timeout = (duration_ms(src, &f, v)?, src.from(&f, v)),
            "retry_policy" => retry_policy = Some((f, v)),
            "hedge_policy" => hedge_policy = Some((f, v)),
            "cluster" | "cluster_header" | "weighted_clusters" => {}
            _ => not_mapped.push(format!("{}: a route action setting faultline does not model", src.at(&f, v))),
        }
    }
    // A route's own policies replace the virtual host's (never merged).
    if let Some((vf, vh)) = &r.vhost {
        let vm = object(src, vf, vh)?;
        for (k, v) in vm {
            let f = format!("{vf}.{k}");
            match snake(k).as_str() {
                "retry_policy" if retry_policy.is_none() => retry_policy = Some((f, v)),
                "hedge_policy" if hedge_policy.is_none() => hedge_policy = Some((f, v)),
                _ => {}
            }
        }
    }
    out.wait = if timeout.0 == 0.0 {
        Wait {
            ms: 0.0,
            why: format!("{}; 0 disables it, and a pending request is then refused here at once", timeout.1),
        }
    } else {
        Wait { ms: timeout.0, why: format!("{}: a pending request waits until the route timeout", timeout.1) }
    };
    let per_try = match retry_policy {
        Some((f, v)) => map_retry(src, &f, v, &mut out, not_mapped)?,
        None => {
            out.retry.push(field("max_attempts", "1".into(), "no retry_policy: Envoy does not retry".into()));
            None
        }
    };
    // timeout_ms: the per-try timeout, else the route's (which in Envoy spans every attempt).
    let route_desc = timeout.1.clone();
    match per_try {
        Some((ms, why)) if timeout.0 == 0.0 || ms <= timeout.0 => {
            out.fields.push(field("timeout_ms", toml_number(ms), why))
        }
        Some((_, why)) => {
            out.fields.push(field("timeout_ms", toml_number(timeout.0), format!("{route_desc}; below {why}")))
        }
        None => out.fields.push(field(
            "timeout_ms",
            toml_number(timeout.0),
            format!("{route_desc}; no per_try_timeout: each attempt may take the route timeout"),
        )),
    }
    if timeout.0 > 0.0 {
        not_mapped.push(format!(
            "{}: Envoy's route timeout spans every attempt and backoff of the request (\"includes all retries\"); faultline's timeout_ms ends each attempt, so a request may last up to max_attempts x timeout_ms plus backoffs (the workflow's deadline_ms bounds the run)",
            route_desc.trim_start_matches("from ")
        ));
    }
    if let Some((f, v)) = hedge_policy {
        map_hedge(src, &f, v, not_mapped)?;
    }
    Ok(out)
}

/// Returns the per-try timeout (ms, comment) if set.
fn map_retry(
    src: &Src,
    f: &str,
    node: &Node,
    out: &mut RouteOut,
    not_mapped: &mut Vec<String>,
) -> Result<Option<(f64, String)>, String> {
    let m = object(src, f, node)?;
    known(src, f, m, &RETRY_KEYS)?;
    let mut num_retries = (1u32, "Envoy's default num_retries (1)".to_string());
    let mut per_try = None;
    let mut kinds: Vec<&str> = Vec::new();
    let mut retry_on_desc = "retry_on absent: Envoy retries nothing".to_string();
    let mut wants_codes = false;
    let mut codes: Vec<(u32, &Node)> = Vec::new();
    let mut rate_limited = None;
    let mut base = (25.0, "Envoy's default base_interval (25 ms)".to_string());
    let mut max = None;
    let mut words: Vec<String> = Vec::new();
    let mut retry_on_node = None;
    for (k, v) in m {
        let kf = format!("{f}.{k}");
        match snake(k).as_str() {
            "retry_on" => {
                retry_on_node = Some((kf.clone(), v));
                let s = string(src, &kf, v)?;
                retry_on_desc = src.from(&kf, v);
                for c in s.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                    words.push(c.to_string());
                    match condition(c) {
                        Ok(ks) => {
                            if c == "retriable-status-codes" {
                                wants_codes = true;
                            }
                            kinds.extend(ks.iter().copied());
                            if c == "5xx" {
                                not_mapped.push(format!("{} (5xx): Envoy also retries a 500; a 500 is PERMANENT_PROVIDER here, never retried", src.at(&kf, v)));
                            }
                        }
                        Err(why) => not_mapped.push(format!("{} ({c}): {why}", src.at(&kf, v))),
                    }
                }
            }
            "num_retries" => num_retries = (uint32(src, &kf, v)?, src.from(&kf, v)),
            // 0 is Envoy's "not set" (PROTOBUF_GET_MS_OR_DEFAULT(.., per_try_timeout, 0)).
            "per_try_timeout" => {
                let ms = duration_ms(src, &kf, v)?;
                per_try = (ms > 0.0).then(|| (ms, src.from(&kf, v)));
            }
            "retriable_status_codes" => {
                for (i, c) in array(src, &kf, v)?.iter().enumerate() {
                    codes.push((uint32(src, &format!("{kf}[{i}]"), c)?, c));
                }
            }
            "retry_back_off" => {
                let bm = object(src, &kf, v)?;
                known(src, &kf, bm, &["base_interval", "max_interval"])?;
                let Some((bk, bn)) = get(bm, "base_interval") else {
                    return Err(src.err(
                        v.pos,
                        &format!("{kf}.base_interval"),
                        "required (Envoy refuses a retry_back_off without it)",
                    ));
                };
                let bf = format!("{kf}.{bk}");
                let d = duration(src, &bf, bn)?;
                let ms = d.ms;
                if d.nanos == 0 {
                    return Err(src.err(bn.pos, &bf, "must be greater than 0 (Envoy: gt 0s)"));
                }
                // Whole milliseconds, at least 1 (RetryPolicyImpl).
                base = (ms.floor().max(1.0), src.from(&bf, bn));
                if let Some((mk, mn)) = get(bm, "max_interval") {
                    let mf = format!("{kf}.{mk}");
                    let md = duration(src, &mf, mn)?;
                    let mms = md.ms;
                    if md.nanos == 0 {
                        return Err(src.err(mn.pos, &mf, "must be greater than 0 (Envoy: gt 0s)"));
                    }
                    // RetryPolicyImpl compares whole milliseconds, each at least 1.
                    let whole = mms.floor().max(1.0);
                    if whole < base.0 {
                        return Err(src.err(mn.pos, &mf, "retry_policy.max_interval must greater than or equal to the base_interval (Envoy refuses the route)"));
                    }
                    max = Some((whole, src.from(&mf, mn)));
                }
            }
            "rate_limited_retry_back_off" => {
                let rm = object(src, &kf, v)?;
                known(src, &kf, rm, &["reset_headers", "max_interval"])?;
                match get(rm, "reset_headers") {
                    Some((hk, hn)) if !array(src, &format!("{kf}.{hk}"), hn)?.is_empty() => {}
                    _ => {
                        return Err(src.err(
                            v.pos,
                            &format!("{kf}.reset_headers"),
                            "at least one reset header is required (Envoy: min_items 1)",
                        ));
                    }
                }
                rate_limited = Some((kf.clone(), v));
            }
            _ => not_mapped.push(format!(
                "{}: host selection and header matching on retries are not modelled (one station)",
                src.at(&kf, v)
            )),
        }
    }
    if wants_codes {
        for (code, n) in &codes {
            match status_kind(*code) {
                Ok(kind) => kinds.push(kind),
                Err(why) => not_mapped.push(format!("{}: {why}", src.at(&format!("{f}.retriable_status_codes"), n))),
            }
        }
    } else if let Some((_, n)) = codes.first() {
        not_mapped.push(format!(
            "{}: retry_on has no retriable-status-codes, so Envoy does not retry on these",
            src.at(&format!("{f}.retriable_status_codes"), n)
        ));
    }
    let ordered: Vec<&str> = KIND_ORDER.iter().copied().filter(|k| kinds.contains(k)).collect();
    if let Some((kf, v)) = retry_on_node
        && ordered.contains(&"TRANSIENT_TRANSPORT")
    {
        // A per-try timeout is a local reset (router.cc onPerTryTimeoutCommon ->
        // maybeRetryReset(LocalReset)); wouldRetryFromReset retries it only under 5xx,
        // gateway-error (and reset where Envoy has it); connect-failure and refused-stream retry
        // only their own reset reasons.
        if !words.iter().any(|w| matches!(w.as_str(), "5xx" | "gateway-error" | "reset")) {
            not_mapped.push(format!("{}: Envoy retries a per-try timeout only under 5xx, gateway-error or reset (router.cc onPerTryTimeoutCommon -> retry_state_impl.cc wouldRetryFromReset with LocalReset); faultline's TRANSIENT_TRANSPORT, written for the connection failures, also covers an attempt's timeout, so here a timed-out attempt is retried (num_retries 2 with per_try_timeout 2 s against a dependency answering in 5 s: 3 attempts a call here, 1 in Envoy); faultline has no kind for a connection failure apart from a timeout", src.at(&kf, v)));
        }
        // Envoy's retry decisions never look at the method.
        not_mapped.push(format!("{}: Envoy retries a write (POST) like a read (wouldRetryFromReset and wouldRetryFromHeaders never look at the method); faultline's runtime gives up a write step that is not deduplicated after TRANSIENT_TRANSPORT (the failure may hide a commit) and handles a timed-out write by on_effect_unknown, and no setting makes it retry the first blindly (a write step failing every attempt with transient_transport under this retry: 1 attempt a call here, num_retries + 1 in Envoy)", src.at(&kf, v)));
    }
    let attempts = num_retries.0.saturating_add(1);
    if attempts > 20 {
        not_mapped.push(format!(
            "{}: faultline allows at most 20 attempts (19 retries); written as 20",
            num_retries.1.trim_start_matches("from ")
        ));
    }
    out.retry.push(field(
        "max_attempts",
        attempts.min(20).to_string(),
        format!("{}; attempts = num_retries + 1", num_retries.1),
    ));
    let list: Vec<String> = ordered.iter().map(|k| quote(k)).collect();
    out.retry.push(field("retry_on", format!("[{}]", list.join(", ")), format!("{retry_on_desc}; 5xx, gateway-error -> OVERLOADED + TRANSIENT_TRANSPORT, reset, connect-failure -> TRANSIENT_TRANSPORT, status 429 -> RATE_LIMITED")));
    out.retry.push(field(
        "honor_retry_after",
        rate_limited.is_some().to_string(),
        if rate_limited.is_some() {
            "rate_limited_retry_back_off: Envoy waits for the server's reset header"
        } else {
            "no rate_limited_retry_back_off: Envoy ignores Retry-After"
        }
        .into(),
    ));
    if let Some((rf, rn)) = rate_limited {
        not_mapped.push(format!("{}: Envoy waits the header's interval jittered up to 1.5x and falls back to the backoff when it is above max_interval (300 s by default); faultline sleeps the Retry-After exactly", src.at(&rf, rn)));
    }
    let max = max.unwrap_or((base.0 * 10.0, "Envoy's default max_interval, 10 x base_interval".into()));
    out.backoff.push(field(
        "kind",
        "\"exponential\"".into(),
        "Envoy's fully jittered exponential backoff (backoff_strategy.cc)".into(),
    ));
    out.backoff.push(field("base_ms", toml_number(base.0), base.1));
    out.backoff.push(field("max_ms", toml_number(max.0), max.1));
    out.backoff.push(field(
        "jitter",
        "\"full\"".into(),
        "retry n sleeps random % min(base x 2^(n-1), max) ms: uniform below the cap".into(),
    ));
    Ok(per_try)
}

fn map_hedge(src: &Src, f: &str, node: &Node, not_mapped: &mut Vec<String>) -> Result<(), String> {
    let m = object(src, f, node)?;
    known(src, f, m, &["initial_requests", "additional_request_chance", "hedge_on_per_try_timeout"])?;
    for (k, v) in m {
        let kf = format!("{f}.{k}");
        match snake(k).as_str() {
            "initial_requests" => {
                let n = uint32(src, &kf, v)?;
                if n < 1 {
                    return Err(src.err(v.pos, &kf, "must be at least 1 (Envoy: gte 1)"));
                }
                if n > 1 {
                    not_mapped
                        .push(format!("{}: Envoy does not implement initial_requests above 1 yet", src.at(&kf, v)));
                }
            }
            "additional_request_chance" => {
                not_mapped.push(format!("{}: Envoy does not implement it yet", src.at(&kf, v)))
            }
            _ => {
                if boolean(src, &kf, v)? {
                    not_mapped.push(format!("{}: Envoy sends a retry at a per-try timeout and keeps the first attempt going; faultline's hedging sends one after delay_ms, but its timeout_ms would end the first attempt, so this is not mapped (the per-try timeout ends the attempt here)", src.at(&kf, v)));
                }
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ the fragment

pub fn import(text: &str, o: &EnvoyOptions) -> Result<Fragment, String> {
    let src = Src { shown: o.shown, name: o.name };
    let lower = o.name.to_ascii_lowercase();
    let doc = if lower.ends_with(".json") {
        parse(text).map_err(|(pos, why)| src.err(pos, "(JSON)", why))?
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        let mut docs =
            parse_documents(text).map_err(|(pos, why)| format!("{}:{}:{}: {why}", o.shown, pos.line, pos.col))?;
        if docs.len() != 1 {
            return Err(format!("{}: an Envoy configuration is one YAML document, found {}", o.shown, docs.len()));
        }
        docs.remove(0)
    } else {
        return Err(format!("{}: an Envoy configuration ends in .yaml, .yml or .json", o.shown));
    };
    let found = find(&src, &doc)?;
    for (cluster, _) in o.dependencies {
        if !found.clusters.iter().any(|c| &c.name == cluster) {
            let names: Vec<&str> = found.clusters.iter().map(|c| c.name.as_str()).collect();
            return Err(format!(
                "argument `--dependency {cluster}=...`: the file has no cluster `{cluster}` (clusters: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            ));
        }
    }
    let mut not_mapped = found.not_mapped;
    let mut fragment = Fragment::default();
    fragment
        .header
        .push("faultline import envoy (semantics of Envoy v1.32+, read from its source; docs/import.md)".into());
    fragment.header.push(format!("file: {} ({})", o.name, found.shape));
    // The route: the one named, else the first.
    let route = match o.route {
        Some(name) => Some(found.routes.iter().find(|r| r.name.as_deref() == Some(name)).ok_or_else(|| {
            let names: Vec<&str> = found.routes.iter().filter_map(|r| r.name.as_deref()).collect();
            format!(
                "argument `--route {name}`: no route with that name (named routes: {})",
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )
        })?),
        // The first route that forwards (a `route` action): a direct_response or a redirect calls
        // no upstream, so its retry settings are nobody's.
        None => found.routes.iter().find(|r| forwards(r.node)).or(found.routes.first()),
    };
    let mut tables = Vec::new();
    let mut wait = Wait {
        ms: 15_000.0,
        why: "Envoy's default route timeout (15 s; no route in the file): a pending request waits until it".into(),
    };
    match route {
        Some(r) => {
            let label = if r.path.is_empty() { "the route".to_string() } else { r.path.clone() };
            fragment
                .header
                .push(format!("route: {label}{}", r.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()));
            let others: Vec<String> = found
                .routes
                .iter()
                .filter(|x| !std::ptr::eq(*x, r))
                .map(|x| x.name.clone().unwrap_or_else(|| x.path.clone()))
                .collect();
            if !others.is_empty() {
                fragment.header.push(format!("not selected: {} (import them with --route NAME)", others.join(", ")));
            }
            let out = map_route(&src, r, &mut not_mapped)?;
            wait = out.wait;
            tables.push(Table { header: format!("[policy.{}]", o.policy), fields: out.fields });
            tables.push(Table { header: format!("[policy.{}.retry]", o.policy), fields: out.retry });
            if !out.backoff.is_empty() {
                tables.push(Table { header: format!("[policy.{}.retry.backoff]", o.policy), fields: out.backoff });
            }
        }
        None => {
            fragment.header.push("route: none in the file; the policy's timeout and retry are faultline's defaults (import the route configuration for Envoy's)".into());
        }
    }
    if tables.is_empty() {
        tables.push(Table { header: format!("[policy.{}]", o.policy), fields: Vec::new() });
    }
    for c in &found.clusters {
        let dependency = o
            .dependencies
            .iter()
            .find(|(cl, _)| *cl == c.name)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| c.name.clone());
        map_cluster(&src, c, &dependency, &wait, o.policy, &mut tables, &mut not_mapped)?;
    }
    fragment.tables = tables;
    not_mapped.push("backoff: Envoy draws whole milliseconds (random % cap, so up to cap - 1 ms, mean 0.5 ms below faultline's continuous uniform draw below the cap)".into());
    fragment.not_mapped = not_mapped;
    Ok(fragment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, name: &str) -> Result<String, String> {
        let o = EnvoyOptions { shown: name, name, policy: "p", dependencies: &[], route: None };
        import(text, &o).map(|f| f.to_toml())
    }

    #[test]
    fn a_bare_cluster_gets_envoys_default_thresholds() {
        let t = run("name: api\nconnect_timeout: 1s\n", "c.yaml").unwrap();
        assert!(t.contains("max_concurrent_calls = 1024 "), "{t}");
        assert!(t.contains("min_retry_concurrency = 3 ") && t.contains("budget_percent = 0 "), "{t}");
        assert!(t.contains("connect_timeout (c.yaml:2)"), "{t}");
    }

    #[test]
    fn a_route_without_a_retry_policy_does_not_retry_and_defaults_are_envoys() {
        let t = run("match: {prefix: /}\nroute: {cluster: api, retry_policy: {retry_on: 5xx}}\n", "r.yaml").unwrap();
        assert!(t.contains("max_attempts = 2 "), "num_retries defaults to 1: {t}");
        assert!(t.contains("base_ms = 25 ") && t.contains("max_ms = 250 "), "{t}");
        assert!(t.contains("timeout_ms = 15000 "), "{t}");
        let t = run("match: {prefix: /}\nroute: {cluster: api}\n", "r.yaml").unwrap();
        assert!(t.contains("max_attempts = 1 "), "{t}");
    }

    #[test]
    fn backoff_intervals_are_whole_milliseconds_as_envoy_keeps_them() {
        let t = run(
            "match: {prefix: /}\nroute:\n  retry_policy:\n    retry_back_off: {base_interval: 0.0015s, max_interval: 0.0012s}\n",
            "r.yaml",
        )
        .unwrap();
        assert!(t.contains("base_ms = 1 ") && t.contains("max_ms = 1 "), "1.5 ms and 1.2 ms are both 1 ms: {t}");
        let t = run(
            "match: {prefix: /}\nroute:\n  retry_policy:\n    retry_back_off: {base_interval: 0.0004s}\n",
            "r.yaml",
        )
        .unwrap();
        assert!(t.contains("base_ms = 1 ") && t.contains("max_ms = 10 "), "{t}");
    }

    #[test]
    fn refusals_are_located() {
        let e = run("match: {prefix: /}\nroute:\n  retry_policy:\n    retry_back_off: {base_interval: 1s, max_interval: 0.5s}\n", "r.yaml").unwrap_err();
        assert!(e.starts_with("r.yaml:4:"), "{e}");
        assert!(e.contains("max_interval must greater than or equal"), "{e}");
        let e = run("name: c\noutlier_detection: {consecutive_5xxx: 3}\n", "c.yaml").unwrap_err();
        assert!(e.contains("outlier_detection.consecutive_5xxx: unknown field"), "{e}");
    }
}
