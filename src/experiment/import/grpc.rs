//! gRPC service config JSON -> a faultline policy, with grpc-core's semantics (the C core under
//! grpcio): method-name lookup (exact method, then service, then the default `{}`),
//! `retryPolicy` (maxAttempts clamped to 5), `hedgingPolicy` (which grpc-core ignores),
//! `timeout`, and the global `retryThrottling` (tokenRatio truncated to 3 decimals).
//! The rules and their sources are in docs/import.md; every departure from grpc-core that the
//! policy cannot express is listed under NOT MAPPED, never dropped silently.

use super::fragment::{Field, Fragment, Table, toml_number};
use super::json::{Json, Node, Pos, parse};
use super::proto_duration::{self, Reader};

/// grpc-core's `MAX_MAX_RETRY_ATTEMPTS` (retry_service_config.cc): larger values are clamped.
const MAX_ATTEMPTS_CAP: u64 = 5;
/// The largest bucket faultline's `grpc` retry budget holds (gRFC A6's cap too).
const MAX_TOKENS_CAP: u64 = 1000;

/// The gRPC status codes by number (grpc/status.h).
const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// faultline's retryable kinds, in the order `retry_on` lists them.
const KIND_ORDER: [&str; 3] = ["RATE_LIMITED", "OVERLOADED", "TRANSIENT_TRANSPORT"];

/// The status -> failure kind table (docs/import.md): the kinds a retryable status maps to, or
/// why it cannot be retried in faultline.
fn kinds_of(status: &str) -> Result<&'static [&'static str], &'static str> {
    match status {
        "UNAVAILABLE" => Ok(&["OVERLOADED", "TRANSIENT_TRANSPORT"]),
        "RESOURCE_EXHAUSTED" => Ok(&["RATE_LIMITED"]),
        "DEADLINE_EXCEEDED" => Ok(&["TRANSIENT_TRANSPORT"]),
        "ABORTED" => Err("a conflict; faultline has no such kind and never retries it"),
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => {
            Err("PERMANENT_PROVIDER, which faultline never retries (docs/scenario.md 8.1)")
        }
        "INVALID_ARGUMENT"
        | "FAILED_PRECONDITION"
        | "OUT_OF_RANGE"
        | "NOT_FOUND"
        | "ALREADY_EXISTS"
        | "UNIMPLEMENTED" => Err("INVALID_INPUT, which faultline never retries"),
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => Err("UNAUTHORIZED, which faultline never retries"),
        "CANCELLED" => Err("CANCELED, which faultline never retries"),
        _ => Err("OK is a success, not a failure to retry"),
    }
}

/// Where refusals and comments point: the file as given (errors) and its name (comments).
struct Src<'a> {
    shown: &'a str,
    name: &'a str,
}

impl Src<'_> {
    fn err(&self, pos: Pos, field: &str, msg: impl std::fmt::Display) -> String {
        format!("{}:{}:{}: {field}: {msg}", self.shown, pos.line, pos.col)
    }

    /// `from <key> (<file>:<line>) = <raw>`, the provenance every field's comment starts with.
    fn from(&self, field: &str, node: &Node) -> String {
        format!("from {field} ({}:{}) = {}", self.name, node.pos.line, node.raw())
    }

    fn at(&self, field: &str, node: &Node) -> String {
        format!("{field} ({}:{}) = {}", self.name, node.pos.line, node.raw())
    }
}

/// A proto3 JSON Duration in nanoseconds, read as grpc-core's `LoadDuration` reads it
/// (json_object_loader.cc; the rules in [`Reader::GrpcCore`]); a negative duration is refused here.
fn duration(src: &Src, field: &str, node: &Node) -> Result<u128, String> {
    Ok(proto_duration::read(node, Reader::GrpcCore).map_err(|msg| src.err(node.pos, field, msg))?.nanos)
}

fn ms(nanos: u128) -> f64 {
    nanos as f64 / 1e6
}

/// The text grpc-core's `LoadNumber` parses: a JSON number's text, or a string's (grpc-core
/// takes `"4"` where a number is due, as proto3 JSON allows); None for other types.
fn number_text(node: &Node) -> Option<&str> {
    match &node.value {
        Json::Number(n) => Some(n),
        Json::String(s) => Some(s.trim_matches(|c: char| c.is_ascii_whitespace())),
        _ => None,
    }
}

/// A non-negative integer as `absl::SimpleAtoi` reads it: digits with an optional `+`, from a
/// number or a string; `4.0`, `1e1` and `"4."` are refused there and here.
fn integer(src: &Src, field: &str, node: &Node) -> Result<u64, String> {
    let Some(text) = number_text(node) else {
        return Err(src.err(node.pos, field, format!("must be a whole number, found {}", node.value.type_name())));
    };
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(src.err(
            node.pos,
            field,
            format!("must be a whole number of at least 0, found {} (grpc-core refuses it too)", node.raw()),
        ));
    }
    digits.parse::<u64>().map_err(|_| src.err(node.pos, field, format!("{text} is too large")))
}

/// A number as `absl::SimpleAtod` reads it, from a number or a string (`"1."`, `"+0.5"` and
/// `"2e0"` are numbers to grpc-core). grpc-core also takes `"inf"` and `"nan"`; faultline
/// refuses them, as no backoff can be computed from them.
fn number(src: &Src, field: &str, node: &Node) -> Result<f64, String> {
    let Some(text) = number_text(node) else {
        return Err(src.err(node.pos, field, format!("must be a number, found {}", node.value.type_name())));
    };
    let x = text
        .parse::<f64>()
        .map_err(|_| src.err(node.pos, field, format!("{} is not a number (grpc-core refuses it too)", node.raw())))?;
    if !x.is_finite() {
        return Err(src.err(
            node.pos,
            field,
            format!(
                "{}: grpc-core accepts a number that is not finite, but no backoff can be computed from it",
                node.raw()
            ),
        ));
    }
    Ok(x)
}

fn object<'n>(src: &Src, field: &str, node: &'n Node) -> Result<&'n [(String, Node)], String> {
    match &node.value {
        Json::Object(m) => Ok(m),
        other => Err(src.err(node.pos, field, format!("must be an object, found {}", other.type_name()))),
    }
}

fn array<'n>(src: &Src, field: &str, node: &'n Node) -> Result<&'n [Node], String> {
    match &node.value {
        Json::Array(a) => Ok(a),
        other => Err(src.err(node.pos, field, format!("must be an array, found {}", other.type_name()))),
    }
}

fn string<'n>(src: &Src, field: &str, node: &'n Node) -> Result<&'n str, String> {
    match &node.value {
        Json::String(s) => Ok(s),
        other => Err(src.err(node.pos, field, format!("must be a string, found {}", other.type_name()))),
    }
}

fn get<'n>(members: &'n [(String, Node)], key: &str) -> Option<&'n Node> {
    members.iter().find(|(k, _)| k == key).map(|(_, n)| n)
}

fn required<'n>(src: &Src, members: &'n [(String, Node)], at: Pos, field: &str, key: &str) -> Result<&'n Node, String> {
    get(members, key).ok_or_else(|| {
        src.err(at, &format!("{field}.{key}"), "required (grpc-core refuses the service config without it)")
    })
}

/// A status code, by name or number.
fn status(src: &Src, field: &str, node: &Node) -> Result<&'static str, String> {
    match &node.value {
        Json::String(s) => STATUS_NAMES.iter().find(|n| **n == s).copied().ok_or_else(|| {
            src.err(
                node.pos,
                field,
                format!("{s:?} is not a gRPC status code name (upper case, such as \"UNAVAILABLE\")"),
            )
        }),
        Json::Number(n) => Err(src.err(
            node.pos,
            field,
            format!(
                "{n}: grpc-core reads status codes as names and refuses a number (retry_service_config.cc loads std::vector<std::string>); write its name, such as \"UNAVAILABLE\""
            ),
        )),
        other => Err(src.err(node.pos, field, format!("must be a status code name, found {}", other.type_name()))),
    }
}

/// One `name` entry: `/service/method`, `/service/`, or "" for the default.
fn path_of(src: &Src, field: &str, node: &Node) -> Result<String, String> {
    let m = object(src, field, node)?;
    let service = get(m, "service").map(|n| string(src, &format!("{field}.service"), n)).transpose()?.unwrap_or("");
    let method = get(m, "method").map(|n| string(src, &format!("{field}.method"), n)).transpose()?.unwrap_or("");
    if service.is_empty() && !method.is_empty() {
        return Err(src.err(node.pos, field, "method name populated without service name (grpc-core refuses it)"));
    }
    Ok(if service.is_empty() { String::new() } else { format!("/{service}/{method}") })
}

struct Retry<'n> {
    max_attempts: (u64, &'n Node),
    initial: (u128, &'n Node),
    max: (u128, &'n Node),
    multiplier: (f64, &'n Node),
    codes: (Vec<&'static str>, &'n Node),
    /// Keys grpc-core does not act on here, each with why: listed, never dropped silently.
    ignored: Vec<(String, &'n Node, &'static str)>,
}

struct MethodConfig<'n> {
    index: usize,
    /// Each name's path and where it is written.
    paths: Vec<(String, Pos)>,
    timeout: Option<(u128, &'n Node)>,
    retry: Option<Retry<'n>>,
    /// grpc-core ignores it; kept to say so.
    hedge: Option<&'n Node>,
    /// Keys read but not mapped: (field, node, reason).
    ignored: Vec<(String, &'n Node, &'static str)>,
}

fn attempts(src: &Src, field: &str, node: &Node) -> Result<u64, String> {
    let n = integer(src, field, node)?;
    if n < 2 {
        return Err(src.err(node.pos, field, format!("must be at least 2, found {n} (grpc-core refuses it)")));
    }
    Ok(n)
}

fn positive_duration(src: &Src, field: &str, node: &Node) -> Result<u128, String> {
    let d = duration(src, field, node)?;
    if d == 0 {
        return Err(src.err(node.pos, field, "must be greater than 0 (grpc-core refuses 0)"));
    }
    Ok(d)
}

fn read_retry<'n>(src: &Src, field: &str, node: &'n Node) -> Result<Retry<'n>, String> {
    let m = object(src, field, node)?;
    let req = |key: &str| required(src, m, node.pos, field, key);
    let f = |key: &str| format!("{field}.{key}");
    let max_attempts = req("maxAttempts")?;
    let initial = req("initialBackoff")?;
    let max = req("maxBackoff")?;
    let mult = req("backoffMultiplier")?;
    let codes = req("retryableStatusCodes")?;
    let multiplier = number(src, &f("backoffMultiplier"), mult)?;
    if multiplier <= 0.0 {
        return Err(src.err(mult.pos, &f("backoffMultiplier"), "must be greater than 0 (grpc-core refuses it)"));
    }
    let list = array(src, &f("retryableStatusCodes"), codes)?;
    if list.is_empty() {
        return Err(src.err(codes.pos, &f("retryableStatusCodes"), "must not be empty (grpc-core refuses it)"));
    }
    let mut statuses = Vec::new();
    for (i, c) in list.iter().enumerate() {
        statuses.push(status(src, &format!("{field}.retryableStatusCodes[{i}]"), c)?);
    }
    let mut ignored = Vec::new();
    for (key, value) in m {
        match key.as_str() {
            "maxAttempts" | "initialBackoff" | "maxBackoff" | "backoffMultiplier" | "retryableStatusCodes" => {}
            "perAttemptRecvTimeout" => ignored.push((
                f(key),
                value,
                "grpc-core reads it only under the channel argument grpc.experimental.enable_hedging; a per-attempt receive timeout is not mapped",
            )),
            _ => ignored.push((f(key), value, "not a retryPolicy key grpc-core reads (it ignores it, and so does this import)")),
        }
    }
    Ok(Retry {
        ignored,
        max_attempts: (attempts(src, &f("maxAttempts"), max_attempts)?, max_attempts),
        initial: (positive_duration(src, &f("initialBackoff"), initial)?, initial),
        max: (positive_duration(src, &f("maxBackoff"), max)?, max),
        multiplier: (multiplier, mult),
        codes: (statuses, codes),
    })
}

fn read_method_config<'n>(src: &Src, index: usize, node: &'n Node) -> Result<MethodConfig<'n>, String> {
    let field = format!("methodConfig[{index}]");
    let m = object(src, &field, node)?;
    let mut mc =
        MethodConfig { index, paths: Vec::new(), timeout: None, retry: None, hedge: None, ignored: Vec::new() };
    for (key, value) in m {
        let f = format!("{field}.{key}");
        match key.as_str() {
            "name" => {
                for (i, n) in array(src, &f, value)?.iter().enumerate() {
                    mc.paths.push((path_of(src, &format!("{f}[{i}]"), n)?, n.pos));
                }
            }
            "timeout" => mc.timeout = Some((duration(src, &f, value)?, value)),
            "retryPolicy" => mc.retry = Some(read_retry(src, &f, value)?),
            "hedgingPolicy" => mc.hedge = Some(value),
            "waitForReady" => {
                if !matches!(value.value, Json::Bool(_)) {
                    return Err(src.err(
                        value.pos,
                        &f,
                        format!(
                            "must be true or false, found {} (grpc-core refuses it: \"is not a boolean\")",
                            value.raw()
                        ),
                    ));
                }
                mc.ignored.push((f, value, "connection readiness is not modelled"))
            }
            "maxRequestMessageBytes" | "maxResponseMessageBytes" => {
                integer(src, &f, value)?;
                mc.ignored.push((f, value, "message sizes are not modelled"))
            }
            _ => mc.ignored.push((f, value, "not a methodConfig key this importer reads; ignored")),
        }
    }
    Ok(mc)
}

struct Throttle<'n> {
    max_tokens: (u64, &'n Node),
    /// tokenRatio x 1000, truncated as grpc-core parses it.
    milli_ratio: (u64, &'n Node),
    truncated: bool,
    /// Keys grpc-core does not read here (it ignores them): listed in NOT MAPPED.
    ignored: Vec<(&'n str, &'n Node)>,
}

fn read_throttle<'n>(src: &Src, node: &'n Node) -> Result<Throttle<'n>, String> {
    let field = "retryThrottling";
    let m = object(src, field, node)?;
    let tokens = required(src, m, node.pos, field, "maxTokens")?;
    let ratio = required(src, m, node.pos, field, "tokenRatio")?;
    let max_tokens = integer(src, "retryThrottling.maxTokens", tokens)?;
    if max_tokens == 0 {
        return Err(src.err(tokens.pos, "retryThrottling.maxTokens", "must be greater than 0 (grpc-core refuses 0)"));
    }
    if max_tokens > MAX_TOKENS_CAP {
        return Err(src.err(
            tokens.pos,
            "retryThrottling.maxTokens",
            format!("{max_tokens} is over {MAX_TOKENS_CAP}: gRFC A6 caps it there and faultline's grpc budget holds at most {MAX_TOKENS_CAP} (grpc-core itself does not enforce the cap)"),
        ));
    }
    let f = "retryThrottling.tokenRatio";
    let text = match &ratio.value {
        Json::Number(n) | Json::String(n) => n.as_str(),
        other => return Err(src.err(ratio.pos, f, format!("must be a number, found {}", other.type_name()))),
    };
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || whole.len() > 9 {
        return Err(src.err(
            ratio.pos,
            f,
            format!("{text} is not a plain decimal such as 0.1 (grpc-core parses the digits)"),
        ));
    }
    let kept: String = format!("{frac:0<3}").chars().take(3).collect();
    let milli = whole.parse::<u64>().unwrap_or(0) * 1000 + kept.parse::<u64>().unwrap_or(0);
    if milli == 0 {
        return Err(src.err(
            ratio.pos,
            f,
            format!("{text} is 0 once truncated to 3 decimals; it must be greater than 0"),
        ));
    }
    let ignored =
        m.iter().filter(|(k, _)| k != "maxTokens" && k != "tokenRatio").map(|(k, n)| (k.as_str(), n)).collect();
    Ok(Throttle {
        ignored,
        max_tokens: (max_tokens, tokens),
        milli_ratio: (milli, ratio),
        truncated: frac.len() > 3 && frac[3..].chars().any(|c| c != '0'),
    })
}

/// The methodConfig grpc-core applies to `method` (`service/method` or `service`): exact method,
/// then service, then default. Without `method`: the only methodConfig, else the default.
fn select<'a, 'n>(
    src: &Src,
    configs: &'a [MethodConfig<'n>],
    method: Option<&str>,
) -> Result<(Option<&'a MethodConfig<'n>>, String), String> {
    let find = |path: &str| configs.iter().find(|c| c.paths.iter().any(|(p, _)| p == path));
    match method {
        Some(m) => {
            let m = m.strip_prefix('/').unwrap_or(m);
            let (service, name) = m.split_once('/').unwrap_or((m, ""));
            if service.is_empty() || name.contains('/') {
                return Err(format!(
                    "argument `--method {m}`: give service/method (`helloworld.Greeter/SayHello`) or a service"
                ));
            }
            let exact = format!("/{service}/{name}");
            let svc = format!("/{service}/");
            let call = if name.is_empty() { format!("service {service}") } else { format!("/{service}/{name}") };
            if !name.is_empty()
                && let Some(c) = find(&exact)
            {
                return Ok((Some(c), format!("{call} -> methodConfig[{}] (exact method name)", c.index)));
            }
            if let Some(c) = find(&svc) {
                return Ok((Some(c), format!("{call} -> methodConfig[{}] (service name)", c.index)));
            }
            if let Some(c) = find("") {
                return Ok((Some(c), format!("{call} -> methodConfig[{}] (the default, name {{}})", c.index)));
            }
            Ok((None, format!("{call} -> no methodConfig matches: grpc-core applies no timeout and no retries")))
        }
        None => match configs {
            [] => Ok((None, "no methodConfig: grpc-core applies no timeout and no retries".into())),
            // A methodConfig without names applies to no call (grpcio 1.85.1: one attempt).
            [only] if only.paths.is_empty() => Ok((
                None,
                "methodConfig[0] has no name: grpc-core applies it to no call, so no timeout and no retries".into(),
            )),
            [only] => Ok((Some(only), "the only methodConfig, methodConfig[0]".into())),
            _ => match find("") {
                Some(c) => Ok((Some(c), format!("no --method: the default methodConfig[{}]", c.index))),
                None => {
                    let names: Vec<String> = configs
                        .iter()
                        .flat_map(|c| c.paths.iter().map(|(p, _)| p.trim_matches('/').to_string()))
                        .collect();
                    Err(format!(
                        "{}: {} methodConfigs and no default: pass --method service/method to say which call to import ({})",
                        src.shown,
                        configs.len(),
                        names.join(", ")
                    ))
                }
            },
        },
    }
}

/// The whole import: `text` is the file's contents, `shown` its path as given, `name` its
/// file name (for comments).
pub fn import(text: &str, shown: &str, name: &str, method: Option<&str>, policy: &str) -> Result<Fragment, String> {
    let src = Src { shown, name };
    let doc = parse(text).map_err(|(pos, why)| src.err(pos, "(JSON)", why))?;
    let top = object(&src, "(service config)", &doc)?;
    let mut configs = Vec::new();
    let mut throttle = None;
    let mut not_mapped: Vec<String> = Vec::new();
    for (key, value) in top {
        match key.as_str() {
            "methodConfig" => {
                for (i, n) in array(&src, key, value)?.iter().enumerate() {
                    configs.push(read_method_config(&src, i, n)?);
                }
            }
            "retryThrottling" => throttle = Some(read_throttle(&src, value)?),
            "loadBalancingConfig" | "loadBalancingPolicy" | "healthCheckConfig" => {
                not_mapped.push(format!("{}: load balancing and health checking are not modelled", src.at(key, value)))
            }
            _ => not_mapped
                .push(format!("{}: not a service config key this importer reads; ignored", src.at(key, value))),
        }
    }
    // grpc-core refuses the whole service config over a duplicate name (service_config_impl.cc).
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for c in &configs {
        for (p, pos) in &c.paths {
            if let Some((_, first)) = seen.iter().find(|(q, _)| *q == p.as_str()) {
                let what = if p.is_empty() {
                    "duplicate default method config".to_string()
                } else {
                    format!("multiple method configs for path {p}")
                };
                return Err(src.err(
                    *pos,
                    &format!("methodConfig[{}].name", c.index),
                    format!("{what} (also in methodConfig[{first}]); grpc-core refuses the whole service config"),
                ));
            }
            seen.push((p, c.index));
        }
    }
    let (chosen, how) = select(&src, &configs, method)?;

    let mut fragment = Fragment::default();
    fragment.header.push(
        "faultline import grpc-service-config (semantics of grpc-core, the C core under grpcio; docs/import.md)".into(),
    );
    fragment.header.push(format!("file: {name}"));
    fragment.header.push(format!("call: {how}"));
    let others: Vec<String> = configs
        .iter()
        .filter(|c| chosen.is_none_or(|ch| ch.index != c.index))
        .map(|c| format!("methodConfig[{}]", c.index))
        .collect();
    if !others.is_empty() {
        fragment.header.push(format!("not selected: {} (import them with --method)", others.join(", ")));
    }
    fragment.header.push(format!("applies to every step of policy {policy}: a service config names no steps"));

    let p = format!("policy.{policy}");
    let mut top_fields = Vec::new();
    let mut retry_fields = Vec::new();
    let mut backoff_fields = Vec::new();
    let mut retry_on_codes: Option<&[&'static str]> = None;

    match chosen {
        None => {
            top_fields.push(Field {
                key: "timeout_ms".into(),
                value: "0".into(),
                comment: "no methodConfig applies: no deadline".into(),
            });
            retry_fields.push(Field {
                key: "max_attempts".into(),
                value: "1".into(),
                comment: "no methodConfig applies: no retries".into(),
            });
        }
        Some(mc) => {
            let f = format!("methodConfig[{}]", mc.index);
            match mc.timeout {
                Some((nanos, node)) => {
                    top_fields.push(Field {
                        key: "timeout_ms".into(),
                        value: toml_number(ms(nanos)),
                        comment: format!(
                            "{}; per attempt here, per call in gRPC (NOT MAPPED)",
                            src.from(&format!("{f}.timeout"), node)
                        ),
                    });
                    not_mapped.push(format!(
                        "{}: gRPC's deadline spans every attempt and backoff and ends the call (DEADLINE_EXCEEDED, never retried); faultline's timeout_ms restarts at each attempt, so a call may last up to max_attempts timeouts plus backoffs (a call-level timeout needs call_timeout_ms, not built)",
                        src.at(&format!("{f}.timeout"), node)
                    ));
                }
                None => top_fields.push(Field {
                    key: "timeout_ms".into(),
                    value: "0".into(),
                    comment: format!("{f}.timeout absent: grpc-core sets no deadline"),
                }),
            }
            for (field, node, why) in &mc.ignored {
                not_mapped.push(format!("{}: {why}", src.at(field, node)));
            }
            if let Some(r) = &mc.retry {
                let rf = format!("{f}.retryPolicy");
                for (field, node, why) in &r.ignored {
                    not_mapped.push(format!("{}: {why}", src.at(field, node)));
                }
                let (n, node) = r.max_attempts;
                let clamped = n.min(MAX_ATTEMPTS_CAP);
                let mut comment = src.from(&format!("{rf}.maxAttempts"), node);
                if n > MAX_ATTEMPTS_CAP {
                    comment.push_str("; clamped to 5 as grpc-core does (MAX_MAX_RETRY_ATTEMPTS)");
                }
                retry_fields.push(Field { key: "max_attempts".into(), value: clamped.to_string(), comment });
                retry_on_codes = Some(&r.codes.0);
                let mut kinds: Vec<&str> = Vec::new();
                for code in &r.codes.0 {
                    match kinds_of(code) {
                        Ok(ks) => kinds.extend(ks.iter().copied()),
                        Err(why) => not_mapped.push(format!(
                            "{} ({code}): {why}",
                            src.at(&format!("{rf}.retryableStatusCodes"), r.codes.1)
                        )),
                    }
                }
                let list: Vec<String> =
                    KIND_ORDER.iter().filter(|k| kinds.contains(k)).map(|k| format!("\"{k}\"")).collect();
                retry_fields.push(Field {
                    key: "retry_on".into(),
                    value: format!("[{}]", list.join(", ")),
                    comment: format!(
                        "{}; UNAVAILABLE -> OVERLOADED + TRANSIENT_TRANSPORT, RESOURCE_EXHAUSTED -> RATE_LIMITED, DEADLINE_EXCEEDED -> TRANSIENT_TRANSPORT",
                        src.from(&format!("{rf}.retryableStatusCodes"), r.codes.1)
                    ),
                });
                retry_fields.push(Field {
                    key: "honor_retry_after".into(),
                    value: "true".into(),
                    comment: "grpc-core sleeps a grpc-retry-pushback-ms instead of the backoff (gRFC A6 Pushback)"
                        .into(),
                });
                not_mapped.push(format!(
                    "{rf} pushback: grpc-core sleeps a grpc-retry-pushback-ms after any retryable status, stops the retries at a negative one, and resets the backoff after one; faultline sleeps a Retry-After after RATE_LIMITED (RESOURCE_EXHAUSTED) only, has no negative one, and keeps its backoff (tests/differential_grpc.rs)"
                ));
                not_mapped.push(format!(
                    "{rf} commit rule: grpc-core never retries an attempt after the server sent response headers or a message (gRFC A6 \"When Retries are Valid\"); faultline retries every failure in retry_on (tests/differential_grpc.rs: a grpcio handler that fails with set_code and a response, or after send_initial_metadata, is never retried; one that aborts first is)"
                ));
                map_backoff(&src, &rf, r, &mut backoff_fields, &mut not_mapped);
            }
            if let Some(h) = &mc.hedge {
                // grpc-core (and so grpcio) parses no hedgingPolicy: its per-method retry parser
                // reads `retryPolicy` only (retry_service_config.cc, MethodConfig's loader), so a
                // hedgingPolicy is ignored and the call is neither hedged nor retried by it.
                let hf = format!("{f}.hedgingPolicy");
                let what =
                    if mc.retry.is_some() { "the retryPolicy beside it applies" } else { "the call is sent once" };
                not_mapped.push(format!(
                    "{}: grpc-core does not implement hedging and ignores this key ({what}); no [hedging] is written, as grpcio would not hedge (grpc-java and grpc-go do, gRFC A6)",
                    src.at(&hf, h)
                ));
            }
            if mc.retry.is_none() {
                retry_fields.push(Field {
                    key: "max_attempts".into(),
                    value: "1".into(),
                    comment: format!("{f} has no retryPolicy: grpc-core does not retry"),
                });
            }
        }
    }
    fragment.tables.push(Table { header: format!("[{p}]"), fields: top_fields });
    fragment.tables.push(Table { header: format!("[{p}.retry]"), fields: retry_fields });
    if !backoff_fields.is_empty() {
        fragment.tables.push(Table { header: format!("[{p}.retry.backoff]"), fields: backoff_fields });
    }
    if let Some(t) = throttle {
        let (tokens, tnode) = t.max_tokens;
        let (milli, rnode) = t.milli_ratio;
        let mut ratio_comment = src.from("retryThrottling.tokenRatio", rnode);
        if t.truncated {
            ratio_comment.push_str("; truncated to 3 decimals as grpc-core parses it");
        }
        fragment.tables.push(Table {
            header: format!("[[{p}.retry_budget]]"),
            fields: vec![
                Field {
                    key: "kind".into(),
                    value: "\"grpc\"".into(),
                    comment: "from retryThrottling (gRFC A6 retry throttling)".into(),
                },
                Field {
                    key: "max_tokens".into(),
                    value: tokens.to_string(),
                    comment: src.from("retryThrottling.maxTokens", tnode),
                },
                Field { key: "token_ratio".into(), value: toml_number(milli as f64 / 1000.0), comment: ratio_comment },
            ],
        });
        for (key, node) in &t.ignored {
            not_mapped.push(format!(
                "{}: not a retryThrottling key grpc-core reads (it ignores it, and so does this import)",
                src.at(&format!("retryThrottling.{key}"), node)
            ));
        }
        not_mapped.push(
            "retryThrottling scope: grpc-core keeps one bucket per server name for the whole process; here one per dependency, and a retry asks after its backoff, not at the decision (docs/scenario.md 8.9)".into(),
        );
        let exact = ["DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE"];
        let mut codes: Vec<&str> = retry_on_codes.map(|c| c.to_vec()).unwrap_or_default();
        codes.sort_unstable();
        codes.dedup();
        if codes != exact {
            not_mapped.push(format!(
                "retryThrottling failures: grpc-core takes a token for each status in the method's retryableStatusCodes ({}); faultline's grpc budget always counts RATE_LIMITED, OVERLOADED, TRANSIENT_TRANSPORT and EFFECT_UNKNOWN (RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED)",
                if codes.is_empty() { "none here".to_string() } else { codes.join(", ") }
            ));
        }
    }
    fragment.not_mapped = not_mapped;
    Ok(fragment)
}

/// grpc-core's backoff: retry n sleeps `cur_n x U[0.8, 1.2)`, `cur_1 = initialBackoff`,
/// `cur_n = min(cur_{n-1} x multiplier, maxBackoff)` (src/core/util/backoff.cc). faultline's
/// exponential cap is `min(max_ms, base_ms x multiplier^n)`, the same caps, and its randomized
/// jitter with factor 0.2 is the same U[0.8, 1.2) after the cap; `constant` when the multiplier
/// is 1 or the first backoff already reaches the maximum.
fn map_backoff(src: &Src, rf: &str, r: &Retry, fields: &mut Vec<Field>, not_mapped: &mut Vec<String>) {
    let (initial, inode) = r.initial;
    let (max, mnode) = r.max;
    let (mult, multnode) = r.multiplier;
    let init_f = format!("{rf}.initialBackoff");
    let max_f = format!("{rf}.maxBackoff");
    let mult_f = format!("{rf}.backoffMultiplier");
    if initial >= max {
        fields.push(Field {
            key: "kind".into(),
            value: "\"constant\"".into(),
            comment: "initialBackoff >= maxBackoff: every sleep is maxBackoff".into(),
        });
        fields.push(Field { key: "base_ms".into(), value: toml_number(ms(max)), comment: src.from(&max_f, mnode) });
        if initial > max {
            not_mapped.push(format!("{}: grpc-core's first sleep is initialBackoff, over maxBackoff; faultline sleeps maxBackoff from the first retry", src.at(&init_f, inode)));
        }
    } else if mult == 1.0 {
        fields.push(Field { key: "kind".into(), value: "\"constant\"".into(), comment: src.from(&mult_f, multnode) });
        fields.push(Field {
            key: "base_ms".into(),
            value: toml_number(ms(initial)),
            comment: src.from(&init_f, inode),
        });
    } else {
        fields.push(Field {
            key: "kind".into(),
            value: "\"exponential\"".into(),
            comment: src.from(&mult_f, multnode),
        });
        fields.push(Field {
            key: "base_ms".into(),
            value: toml_number(ms(initial)),
            comment: src.from(&init_f, inode),
        });
        fields.push(Field { key: "max_ms".into(), value: toml_number(ms(max)), comment: src.from(&max_f, mnode) });
        // faultline bounds the multiplier at 100; past it the cap differs only if maxBackoff
        // is more than 100 x initialBackoff away.
        let written = mult.min(MAX_MULTIPLIER);
        if written != 2.0 {
            fields.push(Field {
                key: "multiplier".into(),
                value: toml_number(written),
                comment: src.from(&mult_f, multnode),
            });
        }
        if mult > MAX_MULTIPLIER && max > initial.saturating_mul(MAX_MULTIPLIER as u128) {
            not_mapped.push(format!(
                "{}: faultline's multiplier is at most {}, so the second sleep is 100 x initialBackoff where grpc-core's is {} x",
                src.at(&mult_f, multnode),
                toml_number(MAX_MULTIPLIER),
                toml_number(mult)
            ));
        }
    }
    fields.push(Field {
        key: "jitter".into(),
        value: "\"randomized\"".into(),
        comment: "grpc-core multiplies each capped sleep by U[0.8, 1.2) (backoff.cc, jitter 0.2)".into(),
    });
    fields.push(Field {
        key: "randomization_factor".into(),
        value: "0.2".into(),
        comment: "grpc-core's BackoffJitter (retry_filter.h)".into(),
    });
    // The lost retry timer (docs/import.md, departures; tests/differential_grpc.rs): grpc-core
    // holds the sleep in whole milliseconds, a 0 ms `RunAfter` returns `kInvalid`, and
    // `OnRetryTimerLocked` then drops the retry. A sleep can be 0 ms while its cap is under 2 ms.
    let smallest = initial.min(max);
    if smallest < SLEEP_LOST_UNDER_NS {
        let (field, node) = if initial <= max { (&init_f, inode) } else { (&max_f, mnode) };
        not_mapped.push(format!(
            "{}: grpc-core (grpcio 1.85.1) loses a retry whose jittered sleep rounds to 0 ms: the call sends no more attempts and ends at its deadline (DEADLINE_EXCEEDED); with a 1 ms backoff about half the retries (the harness: 24 of 40); faultline sleeps {} ms and retries every time. Use 2 ms or more",
            src.at(field, node),
            toml_number(ms(smallest))
        ));
    }
}

/// Under this cap (2 ms) grpc-core's jittered sleep, cap x U[0.8, 1.2) truncated to whole
/// milliseconds, can be 0 ms, and a 0 ms retry timer is lost (docs/import.md).
const SLEEP_LOST_UNDER_NS: u128 = 2_000_000;

/// faultline's largest `retry.backoff.multiplier` (docs/scenario.md 8.2).
const MAX_MULTIPLIER: f64 = 100.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn import_text(text: &str, method: Option<&str>) -> Result<String, String> {
        import(text, "f.json", "f.json", method, "p").map(|f| f.to_toml())
    }

    const THREE: &str = r#"{"methodConfig": [
      {"name": [{"service": "s.S"}], "timeout": "1s"},
      {"name": [{"service": "s.S", "method": "M"}], "timeout": "2s"},
      {"name": [{}], "timeout": "3s"}]}"#;

    #[test]
    fn the_exact_method_then_the_service_then_the_default() {
        let t = |m| import_text(THREE, Some(m)).unwrap();
        assert!(t("s.S/M").contains("timeout_ms = 2000 "), "{}", t("s.S/M"));
        assert!(t("s.S/Other").contains("timeout_ms = 1000 "));
        assert!(t("s.S").contains("timeout_ms = 1000 "));
        assert!(t("x.Y/M").contains("timeout_ms = 3000 "));
        // No --method: the default one.
        assert!(import_text(THREE, None).unwrap().contains("timeout_ms = 3000 "));
    }

    #[test]
    fn token_ratio_is_truncated_to_three_decimals_and_durations_read_to_the_nanosecond() {
        let t = import_text(r#"{"retryThrottling": {"maxTokens": 7, "tokenRatio": 0.5999}}"#, None).unwrap();
        assert!(t.contains("token_ratio = 0.599 "), "{t}");
        assert!(t.contains("max_tokens = 7 "), "{t}");
        let err = import_text(r#"{"retryThrottling": {"maxTokens": 1001, "tokenRatio": 1}}"#, None).unwrap_err();
        assert!(err.starts_with("f.json:1:35: retryThrottling.maxTokens: 1001 is over 1000"), "{err}");
        let t = import_text(r#"{"methodConfig": [{"name": [{}], "timeout": "0.000001s"}]}"#, None).unwrap();
        assert!(t.contains("timeout_ms = 0.001 "), "{t}");
        let err = import_text(r#"{"methodConfig": [{"name": [{}], "timeout": "1m"}]}"#, None).unwrap_err();
        assert!(err.contains("methodConfig[0].timeout: \"1m\" is not a proto3 JSON duration"), "{err}");
    }

    fn retry(initial: &str, max: &str, multiplier: &str) -> String {
        import_text(
            &format!(
                r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {{"maxAttempts": 3, "initialBackoff": "{initial}", "maxBackoff": "{max}", "backoffMultiplier": {multiplier}, "retryableStatusCodes": ["UNAVAILABLE"]}}}}]}}"#
            ),
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_method_config_without_a_name_applies_to_no_call() {
        let policy = r#""retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.01s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
        for names in ["", r#""name": [], "#] {
            let t = import_text(&format!(r#"{{"methodConfig": [{{{names}{policy}}}]}}"#), None).unwrap();
            assert!(t.contains("applies it to no call") && !t.contains("max_attempts = 4"), "{t}");
        }
    }

    #[test]
    fn backoff_shapes_and_the_lost_zero_ms_timer() {
        let t = retry("0.1s", "1s", "2");
        assert!(t.contains("kind = \"exponential\" ") && t.contains("base_ms = 100 ") && t.contains("max_ms = 1000 "));
        assert!(!t.contains("loses a retry"), "{t}");
        assert!(retry("0.1s", "1s", "1").contains("kind = \"constant\" "));
        assert!(retry("2s", "1s", "2").contains("base_ms = 1000 "));
        let slower = retry("0.1s", "1s", "1.5");
        assert!(slower.contains("multiplier = 1.5 ") && slower.contains("jitter = \"randomized\" "), "{slower}");
        assert!(!t.contains("multiplier = "), "doubling is the default: {t}");
        assert!(retry("0.001s", "10s", "1000").contains("faultline's multiplier is at most 100"));
        assert!(
            !retry("0.1s", "1s", "1000").contains("faultline's multiplier is at most"),
            "the cap is reached anyway"
        );
        let small = retry("0.001s", "0.001s", "2");
        assert!(small.contains("loses a retry whose jittered sleep rounds to 0 ms"), "{small}");
        assert!(!retry("0.002s", "0.002s", "2").contains("loses a retry"));
    }

    #[test]
    fn grpc_core_refusals_are_refused_here() {
        let bad = |policy: &str| {
            import_text(&format!(r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {policy}}}]}}"#), None)
                .unwrap_err()
        };
        let base = r#""initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2"#;
        assert!(
            bad(&format!(r#"{{"maxAttempts": 1, {base}, "retryableStatusCodes": ["UNAVAILABLE"]}}"#))
                .contains("must be at least 2")
        );
        assert!(
            bad(&format!(r#"{{"maxAttempts": 2, {base}, "retryableStatusCodes": ["unavailable"]}}"#))
                .contains("is not a gRPC status code name")
        );
        assert!(
            bad(&format!(r#"{{"maxAttempts": 2, {base}}}"#)).contains("retryPolicy.retryableStatusCodes: required")
        );
        let err = import_text(r#"{"methodConfig": [{"name": [{"method": "M"}]}]}"#, None).unwrap_err();
        assert!(err.contains("method name populated without service name"), "{err}");
    }

    /// Each value's fate in grpcio 1.85.1, as a channel with it as its default service config
    /// showed (accepted, or refused with INVALID_ARGUMENT "errors validating service config").
    #[test]
    fn numbers_and_durations_are_read_as_grpc_core_reads_them() {
        let policy = |attempts: &str, initial: &str, multiplier: &str| {
            import_text(
                &format!(
                    r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {{"maxAttempts": {attempts}, "initialBackoff": {initial}, "maxBackoff": "1s", "backoffMultiplier": {multiplier}, "retryableStatusCodes": ["UNAVAILABLE"]}}}}]}}"#
                ),
                None,
            )
        };
        // Accepted by grpcio: numbers written as strings, a `+`, spaces.
        for (attempts, initial, multiplier) in [
            (r#""4""#, r#""0.1s""#, "2"),
            (r#""+4""#, r#""+0.1s""#, r#""2""#),
            (r#"" 4""#, r#""0.1 s""#, r#""1.""#),
            ("4", r#""0.1s""#, r#""+0.5""#),
            ("4", r#""0.1s""#, r#""2e0""#),
        ] {
            let t = policy(attempts, initial, multiplier).unwrap_or_else(|e| panic!("{attempts} {initial}: {e}"));
            assert!(t.contains("max_attempts = 4 ") && t.contains("base_ms = 100 "), "{t}");
        }
        // Refused by grpcio, and here.
        for (attempts, initial, multiplier, why) in [
            ("4.0", r#""0.1s""#, "2", "maxAttempts: must be a whole number"),
            ("1e1", r#""0.1s""#, "2", "maxAttempts: must be a whole number"),
            (r#""4.""#, r#""0.1s""#, "2", "maxAttempts: must be a whole number"),
            ("4", r#""1.s""#, "2", "1 to 9 digits after the point"),
            ("4", r#"".5s""#, "2", "whole seconds are 1 to 12 digits"),
            ("4", "0.1", "2", "must be a duration string"),
            ("4", r#""0.1s""#, r#""two""#, "backoffMultiplier: \"two\" is not a number"),
        ] {
            let err = policy(attempts, initial, multiplier).unwrap_err();
            assert!(err.contains(why), "{attempts} {initial} {multiplier}: {err}");
        }
        // Accepted by grpcio, refused here: no backoff comes of them.
        for multiplier in [r#""inf""#, r#""nan""#] {
            assert!(policy("4", r#""0.1s""#, multiplier).unwrap_err().contains("not finite"));
        }
        // Whole seconds: digits only, at most 12 (grpc-core's limit is 315 576 000 000 s).
        let timeout =
            |t: &str| import_text(&format!(r#"{{"methodConfig": [{{"name": [{{}}], "timeout": "{t}"}}]}}"#), None);
        assert!(timeout("123456789012s").unwrap().contains("timeout_ms = 123456789012000 "));
        for bad in ["1234567890123s", "1x2s", "1.5x s"] {
            let err = timeout(bad).unwrap_err();
            assert!(err.contains("is not a proto3 JSON duration"), "{bad}: {err}");
        }
        assert!(timeout("1x2s").unwrap_err().contains("whole seconds are 1 to 12 digits"));
        // After the point: 1 to 9 digits.
        assert!(timeout("0.000000001s").unwrap().contains("timeout_ms = 0.000001 "));
        for bad in ["0.0000000001s", "0.5xs", "0.x5s"] {
            assert!(timeout(bad).unwrap_err().contains("1 to 9 digits after the point"), "{bad}");
        }
        assert!(timeout("1234567890123s").unwrap_err().contains("whole seconds are 1 to 12 digits"));
        let wait = import_text(r#"{"methodConfig": [{"name": [{}], "waitForReady": "true"}]}"#, None).unwrap_err();
        assert!(wait.starts_with("f.json:1:50: methodConfig[0].waitForReady: must be true or false"), "{wait}");
        let t = import_text(r#"{"retryThrottling": {"maxTokens": "10", "tokenRatio": "0.1"}}"#, None).unwrap();
        assert!(t.contains("max_tokens = 10 ") && t.contains("token_ratio = 0.1 "), "{t}");
    }

    #[test]
    fn keys_grpc_core_ignores_are_listed_not_dropped() {
        let t = import_text(
            r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"], "perAttemptRecvTimeout": "1s", "maxAttempt": 5}}], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1, "ratio": 1}}"#,
            None,
        )
        .unwrap();
        assert!(
            t.contains(
                "methodConfig[0].retryPolicy.perAttemptRecvTimeout (f.json:1) = \"1s\": grpc-core reads it only under"
            ),
            "{t}"
        );
        assert!(
            t.contains("methodConfig[0].retryPolicy.maxAttempt (f.json:1) = 5: not a retryPolicy key grpc-core reads"),
            "{t}"
        );
        assert!(t.contains("retryThrottling.ratio (f.json:1) = 1: not a retryThrottling key grpc-core reads"), "{t}");
        assert_eq!(t.matches("not a retryPolicy key").count(), 1, "only the misspelt key: {t}");
        assert_eq!(t.matches("not a retryThrottling key").count(), 1, "only the unknown key: {t}");
    }
}
