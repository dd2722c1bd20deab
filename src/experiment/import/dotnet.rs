//! .NET's standard HTTP resilience handler (`AddStandardResilienceHandler`, package
//! Microsoft.Extensions.Http.Resilience) bound from an appsettings.json section -> a faultline
//! policy. The section is `HttpStandardResilienceOptions`: `RateLimiter`, `TotalRequestTimeout`,
//! `Retry`, `CircuitBreaker`, `AttemptTimeout`, each a Polly v8 strategy's options. Keys, defaults,
//! the binder's and the validators' refusals and their sources are in docs/import.md; what the
//! policy cannot express is listed under NOT MAPPED, never dropped silently.

use super::fragment::{Field, Fragment, Table, toml_number};
use super::json::{Json, Node, Pos, parse};

/// TimeSpan ticks (100 ns) per millisecond.
const TICKS_PER_MS: i64 = 10_000;
const TICKS_PER_S: i64 = 1_000 * TICKS_PER_MS;
const DAY: i64 = 86_400 * TICKS_PER_S;

/// The five strategies, as HttpStandardResilienceOptions names them.
const STRATEGIES: [&str; 5] = ["RateLimiter", "TotalRequestTimeout", "Retry", "CircuitBreaker", "AttemptTimeout"];

/// faultline's largest `retry.max_attempts` (docs/scenario.md 8.1).
const MAX_ATTEMPTS: i64 = 20;

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

/// .NET's JSON configuration provider skips comments and allows trailing commas
/// (JsonConfigurationFileParser: `CommentHandling = Skip`, `AllowTrailingCommas = true`). Both
/// are blanked here character for character, so every line and column stays where it was.
fn blank_comments_and_trailing_commas(text: &str) -> Result<String, (Pos, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut in_string = false;
    let mut last_comma: Option<usize> = None;
    let step = |c: char, line: &mut u32, col: &mut u32| {
        if c == '\n' {
            *line += 1;
            *col = 1;
        } else {
            *col += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            if c == '\\' && i + 1 < chars.len() {
                step(c, &mut line, &mut col);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
            step(chars[i], &mut line, &mut col);
            i += 1;
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                last_comma = None;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    out[i] = ' ';
                    step(chars[i], &mut line, &mut col);
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let start = Pos { line, col };
                let mut closed = false;
                while i < chars.len() {
                    if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        out[i] = ' ';
                        out[i + 1] = ' ';
                        step('*', &mut line, &mut col);
                        step('/', &mut line, &mut col);
                        i += 2;
                        closed = true;
                        break;
                    }
                    if chars[i] != '\n' {
                        out[i] = ' ';
                    }
                    step(chars[i], &mut line, &mut col);
                    i += 1;
                }
                if !closed {
                    return Err((start, "unterminated /* comment".into()));
                }
                continue;
            }
            ',' => last_comma = Some(i),
            '}' | ']' => {
                if let Some(j) = last_comma.take() {
                    out[j] = ' ';
                }
            }
            c if c.is_whitespace() => {}
            _ => last_comma = None,
        }
        step(c, &mut line, &mut col);
        i += 1;
    }
    Ok(out.into_iter().collect())
}

/// An object's members with .NET configuration's case-insensitive keys: two keys that differ
/// only in case are one key, and the JSON provider refuses the file ("A duplicate key ... was
/// found.", JsonConfigurationFileParser).
fn members<'n>(src: &Src, path: &str, node: &'n Node) -> Result<&'n [(String, Node)], String> {
    let Json::Object(m) = &node.value else {
        return Err(src.err(node.pos, path, format!("must be an object, found {}", node.value.type_name())));
    };
    for (i, (k, n)) in m.iter().enumerate() {
        if m[..i].iter().any(|(q, _)| q.eq_ignore_ascii_case(k)) {
            return Err(src.err(
                n.pos,
                &join(path, k),
                format!(
                    "A duplicate key '{}' was found. (.NET configuration keys ignore case; the JSON provider refuses the file)",
                    join(path, k)
                ),
            ));
        }
    }
    Ok(m)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}:{key}") }
}

fn get<'n>(m: &'n [(String, Node)], key: &str) -> Option<(&'n str, &'n Node)> {
    m.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(k, n)| (k.as_str(), n))
}

fn has_strategy(node: &Node) -> bool {
    matches!(&node.value, Json::Object(m) if m.iter().any(|(k, _)| STRATEGIES.iter().any(|s| s.eq_ignore_ascii_case(k))))
}

/// The section `--section A:B` names, else the root if it has any of the five keys, else the
/// one object below it that has them.
fn select<'n>(src: &Src, doc: &'n Node, section: Option<&str>) -> Result<(String, &'n Node), String> {
    if let Some(s) = section {
        let mut node = doc;
        let mut path = String::new();
        for part in s.split(':') {
            if part.is_empty() {
                return Err(format!("argument `--section {s}`: an empty key (write A:B, as .NET configuration does)"));
            }
            let m = members(src, &path, node)?;
            let Some((key, child)) = get(m, part) else {
                let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
                return Err(format!(
                    "argument `--section {s}`: {} has no key `{part}` (keys: {})",
                    if path.is_empty() { "the file" } else { path.as_str() },
                    keys.join(", ")
                ));
            };
            path = join(&path, key);
            node = child;
        }
        if !matches!(node.value, Json::Object(_)) {
            return Err(src.err(
                node.pos,
                &path,
                format!("the section must be an object, found {}", node.value.type_name()),
            ));
        }
        return Ok((path, node));
    }
    members(src, "", doc)?;
    if has_strategy(doc) {
        return Ok((String::new(), doc));
    }
    let mut found = Vec::new();
    collect(doc, "", &mut found);
    match found.as_slice() {
        [(p, n)] => Ok((p.clone(), n)),
        [] => Err(format!(
            "{}: no object has any of the keys {} (HttpStandardResilienceOptions); pass --section NAME",
            src.shown,
            STRATEGIES.join(", ")
        )),
        many => {
            let names: Vec<String> = many.iter().map(|(p, n)| format!("{p} (line {})", n.pos.line)).collect();
            Err(format!(
                "{}: {} sections have the standard handler's keys: pass --section with one of {}",
                src.shown,
                many.len(),
                names.join(", ")
            ))
        }
    }
}

fn collect<'n>(node: &'n Node, path: &str, found: &mut Vec<(String, &'n Node)>) {
    if let Json::Object(m) = &node.value {
        for (k, child) in m {
            let p = join(path, k);
            if has_strategy(child) {
                found.push((p, child));
            } else {
                collect(child, &p, found);
            }
        }
    }
}

/// A configuration value's text: the JSON provider stores every value as a string (a number as
/// written, `true` as `True`). Objects, arrays and null are refused where a value is due.
fn text<'n>(src: &Src, path: &str, node: &'n Node, type_name: &str) -> Result<std::borrow::Cow<'n, str>, String> {
    match &node.value {
        Json::String(s) => Ok(s.as_str().into()),
        Json::Number(n) => Ok(n.as_str().into()),
        Json::Bool(b) => Ok(if *b { "True" } else { "False" }.into()),
        Json::Null => {
            Err(src.err(node.pos, path, "null is refused here: write the value, or leave the key out for the default"))
        }
        other => Err(src.err(
            node.pos,
            path,
            format!(
                "Failed to convert configuration value at '{path}' to type '{type_name}'. (found {})",
                other.type_name()
            ),
        )),
    }
}

fn failed(src: &Src, path: &str, node: &Node, type_name: &str, hint: &str) -> String {
    src.err(
        node.pos,
        path,
        format!("Failed to convert configuration value at '{path}' to type '{type_name}'. ({hint})"),
    )
}

/// Int32 as the binder's Int32Converter reads it: spaces around, an optional sign, decimal
/// digits; or hexadecimal after `0x`, `&h` or `#`.
fn int32(src: &Src, path: &str, node: &Node) -> Result<i64, String> {
    let t = text(src, path, node, "System.Int32")?;
    let s = t.trim();
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .or_else(|| s.strip_prefix("&h"))
        .or_else(|| s.strip_prefix("&H"))
        .or_else(|| s.strip_prefix('#'));
    let bad = || failed(src, path, node, "System.Int32", &format!("{} is not a whole number", node.raw()));
    let v = match hex {
        Some(h) if !h.is_empty() && h.len() <= 8 && h.chars().all(|c| c.is_ascii_hexdigit()) => {
            u32::from_str_radix(h, 16).map_err(|_| bad())? as i32 as i64
        }
        Some(_) => return Err(bad()),
        None => {
            let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            s.parse::<i64>().map_err(|_| bad())?
        }
    };
    if !(i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        return Err(failed(src, path, node, "System.Int32", "outside Int32's range"));
    }
    Ok(v)
}

/// Double as DoubleConverter reads it (NumberStyles.Float, invariant culture); infinities and
/// NaN are refused here.
fn double(src: &Src, path: &str, node: &Node) -> Result<f64, String> {
    let t = text(src, path, node, "System.Double")?;
    let s = t.trim();
    let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'));
    match s.parse::<f64>() {
        Ok(x) if ok && x.is_finite() => Ok(x),
        _ => Err(failed(src, path, node, "System.Double", &format!("{} is not a finite number", node.raw()))),
    }
}

/// Boolean as bool.Parse reads it: `true` or `false` in any case, spaces around.
fn boolean(src: &Src, path: &str, node: &Node) -> Result<bool, String> {
    let t = text(src, path, node, "System.Boolean")?;
    match t.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(failed(src, path, node, "System.Boolean", "bool.Parse takes true or false; 1 and yes are refused")),
    }
}

/// An enum as EnumConverter reads it: a member's name in any case, or its number. Numbers of
/// no member are refused here (the binder takes them; Polly then throws at the first retry).
fn enumeration(src: &Src, path: &str, node: &Node, type_name: &str, names: &[&str]) -> Result<usize, String> {
    let t = text(src, path, node, type_name)?;
    let s = t.trim();
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(i);
    }
    if let Ok(i) = s.parse::<usize>()
        && i < names.len()
    {
        return Ok(i);
    }
    Err(failed(src, path, node, type_name, &format!("one of {}", names.join(", "))))
}

/// A TimeSpan as TimeSpan.Parse (invariant culture) reads it, in ticks: `d` (a bare number is
/// days), `hh:mm`, `hh:mm:ss`, each with an optional `d.` before the hours and `.fffffff` after
/// the seconds, an optional `-`, spaces around. Hours 0-23, minutes and seconds 0-59 (larger
/// ones overflow in .NET too). Other forms .NET also reads (`d:hh:mm:ss`) are refused with a
/// message rather than guessed.
fn timespan(src: &Src, path: &str, node: &Node) -> Result<i64, String> {
    let t = text(src, path, node, "System.TimeSpan")?;
    let s = t.trim();
    let bad = |why: &str| failed(src, path, node, "System.TimeSpan", &format!("{}: {why}", node.raw()));
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let num = |p: &str, max: i64, what: &str| -> Result<i64, String> {
        if p.is_empty() || p.len() > 8 || !p.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad(&format!("the {what} are not digits")));
        }
        let v: i64 = p.parse().map_err(|_| bad(what))?;
        if v > max {
            return Err(bad(&format!("{what} {v} is over {max} (TimeSpan.Parse overflows)")));
        }
        Ok(v)
    };
    let ticks = if !body.contains(':') {
        if body.contains('.') {
            return Err(bad(
                "without `:` TimeSpan.Parse reads a whole number of days; write hh:mm:ss.fff, such as 00:00:00.5",
            ));
        }
        num(body, 10_675_199, "days")? * DAY
    } else {
        let parts: Vec<&str> = body.split(':').collect();
        if parts.len() > 3 {
            return Err(bad("d:hh:mm:ss is not read by this importer; write d.hh:mm:ss"));
        }
        let (days, hours) = match parts[0].split_once('.') {
            Some((d, h)) => (num(d, 10_675_199, "days")?, h),
            None => (0, parts[0]),
        };
        let hours = num(hours, 23, "hours")?;
        let (minutes, seconds, frac) = if parts.len() == 2 {
            (num(parts[1], 59, "minutes")?, 0, 0)
        } else {
            let (sec, frac) = match parts[2].split_once('.') {
                Some((sec, f)) => {
                    if f.is_empty() || f.len() > 7 || !f.chars().all(|c| c.is_ascii_digit()) {
                        return Err(bad("1 to 7 digits after the seconds' point"));
                    }
                    (sec, format!("{f:0<7}").parse::<i64>().map_err(|_| bad("fraction"))?)
                }
                None => (parts[2], 0),
            };
            (num(parts[1], 59, "minutes")?, num(sec, 59, "seconds")?, frac)
        };
        days * DAY + hours * 3600 * TICKS_PER_S + minutes * 60 * TICKS_PER_S + seconds * TICKS_PER_S + frac
    };
    Ok(if neg { -ticks } else { ticks })
}

/// A TimeSpan as .NET prints it (`c` format), for messages: `00:00:30`, `1.00:00:00`.
fn show(ticks: i64) -> String {
    let sign = if ticks < 0 { "-" } else { "" };
    let t = ticks.unsigned_abs() as i64;
    let (d, rem) = (t / DAY, t % DAY);
    let (h, rem) = (rem / (3600 * TICKS_PER_S), rem % (3600 * TICKS_PER_S));
    let (m, rem) = (rem / (60 * TICKS_PER_S), rem % (60 * TICKS_PER_S));
    let (s, f) = (rem / TICKS_PER_S, rem % TICKS_PER_S);
    let days = if d > 0 { format!("{d}.") } else { String::new() };
    let frac = if f > 0 { format!(".{f:07}") } else { String::new() };
    format!("{sign}{days}{h:02}:{m:02}:{s:02}{frac}")
}

fn ms(ticks: i64) -> f64 {
    ticks as f64 / TICKS_PER_MS as f64
}

fn seconds(ticks: i64) -> String {
    toml_number(ticks as f64 / TICKS_PER_S as f64)
}

/// A value and where it came from: the key's node, or the default with its source.
struct Val<'n, T> {
    value: T,
    node: Option<&'n Node>,
    path: String,
    default_from: &'static str,
}

impl<T> Val<'_, T> {
    fn comment(&self, src: &Src) -> String {
        match self.node {
            Some(n) => src.from(&self.path, n),
            None => format!("{} absent: the default, {}", self.path, self.default_from),
        }
    }

    fn pos(&self, fallback: Pos) -> Pos {
        self.node.map_or(fallback, |n| n.pos)
    }
}

/// The keys of one strategy's options object that the binder sets (`ErrorOnUnknownConfiguration`
/// refuses any other), with the type named in .NET's message.
struct Strategy<'n> {
    path: String,
    members: &'n [(String, Node)],
}

/// Properties that exist on the options type but hold delegates or objects set in code.
const CODE_ONLY: [&str; 13] = [
    "ShouldHandle",
    "DelayGenerator",
    "OnRetry",
    "Randomizer",
    "TimeoutGenerator",
    "OnTimeout",
    "BreakDurationGenerator",
    "OnClosed",
    "OnOpened",
    "OnHalfOpened",
    "ManualControl",
    "StateProvider",
    "OnRejected",
];

fn strategy<'n>(
    src: &Src,
    section: &'n [(String, Node)],
    base: &str,
    key: &str,
    type_name: &str,
    keys: &[&str],
) -> Result<Option<Strategy<'n>>, String> {
    let Some((written, node)) = get(section, key) else { return Ok(None) };
    let path = join(base, written);
    let m = members(src, &path, node)?;
    for (k, n) in m {
        if keys.iter().any(|x| x.eq_ignore_ascii_case(k)) {
            continue;
        }
        let p = join(&path, k);
        if CODE_ONLY.iter().any(|x| x.eq_ignore_ascii_case(k))
            || (key == "RateLimiter" && k.eq_ignore_ascii_case("RateLimiter"))
        {
            return Err(src.err(
                n.pos,
                &p,
                format!("{k} is a delegate or object set in code, not from configuration; this importer refuses it"),
            ));
        }
        return Err(src.err(
            n.pos,
            &p,
            format!(
                "'ErrorOnUnknownConfiguration' was set on the provided BinderOptions, but the following properties were not found on the instance of {type_name}: '{k}' (the standard handler binds its section with ErrorOnUnknownConfiguration = true)"
            ),
        ));
    }
    Ok(Some(Strategy { path, members: m }))
}

impl<'n> Strategy<'n> {
    fn field(&self, key: &str) -> Option<(String, &'n Node)> {
        get(self.members, key).map(|(k, n)| (join(&self.path, k), n))
    }
}

fn range_ticks(src: &Src, v: &Val<i64>, at: Pos, name: &str, lo: i64, hi: i64) -> Result<(), String> {
    if v.value < lo || v.value > hi {
        return Err(src.err(
            v.pos(at),
            &v.path,
            format!(
                "The field {name} must be between {} and {}. (Polly's [Range] attribute; found {}, refused at start-up by the options validator)",
                show(lo),
                show(hi),
                show(v.value)
            ),
        ));
    }
    Ok(())
}

fn timespan_val<'n>(
    src: &Src,
    s: Option<&Strategy<'n>>,
    parent: &str,
    key: &str,
    default: i64,
    default_from: &'static str,
) -> Result<Val<'n, i64>, String> {
    match s.and_then(|s| s.field(key)) {
        Some((path, node)) => Ok(Val { value: timespan(src, &path, node)?, node: Some(node), path, default_from }),
        None => Ok(Val { value: default, node: None, path: join(parent, key), default_from }),
    }
}

fn strategy_path(base: &str, s: Option<&Strategy>, key: &str) -> String {
    s.map_or_else(|| join(base, key), |s| s.path.clone())
}

/// The whole import. `section` is `--section A:B`.
pub fn import(text: &str, shown: &str, name: &str, section: Option<&str>, policy: &str) -> Result<Fragment, String> {
    let src = Src { shown, name };
    let blanked = blank_comments_and_trailing_commas(text).map_err(|(pos, why)| src.err(pos, "(JSON)", why))?;
    let doc = parse(&blanked).map_err(|(pos, why)| src.err(pos, "(JSON)", why))?;
    let (base, node) = select(&src, &doc, section)?;
    let sec = members(&src, &base, node)?;
    let shown_base = if base.is_empty() { "(the root)".to_string() } else { base.clone() };
    if sec.is_empty() {
        return Err(src.err(
            node.pos,
            &shown_base,
            "Configuration section cannot be empty. (.NET's Configure(section) throws ArgumentException)",
        ));
    }
    for (k, n) in sec {
        if !STRATEGIES.iter().any(|s| s.eq_ignore_ascii_case(k)) {
            return Err(src.err(
                n.pos,
                &join(&base, k),
                format!(
                    "'ErrorOnUnknownConfiguration' was set on the provided BinderOptions, but the following properties were not found on the instance of Microsoft.Extensions.Http.Resilience.HttpStandardResilienceOptions: '{k}' (keys: {})",
                    STRATEGIES.join(", ")
                ),
            ));
        }
    }
    let at = node.pos;
    let ns = "Microsoft.Extensions.Http.Resilience";
    let timeout_keys = ["Timeout", "Name"];
    let rl = strategy(
        &src,
        sec,
        &base,
        "RateLimiter",
        &format!("{ns}.HttpRateLimiterStrategyOptions"),
        &["DefaultRateLimiterOptions", "Name"],
    )?;
    let total =
        strategy(&src, sec, &base, "TotalRequestTimeout", &format!("{ns}.HttpTimeoutStrategyOptions"), &timeout_keys)?;
    let retry = strategy(
        &src,
        sec,
        &base,
        "Retry",
        &format!("{ns}.HttpRetryStrategyOptions"),
        &["MaxRetryAttempts", "BackoffType", "UseJitter", "Delay", "MaxDelay", "ShouldRetryAfterHeader", "Name"],
    )?;
    let cb = strategy(
        &src,
        sec,
        &base,
        "CircuitBreaker",
        &format!("{ns}.HttpCircuitBreakerStrategyOptions"),
        &["FailureRatio", "MinimumThroughput", "SamplingDuration", "BreakDuration", "Name"],
    )?;
    let attempt =
        strategy(&src, sec, &base, "AttemptTimeout", &format!("{ns}.HttpTimeoutStrategyOptions"), &timeout_keys)?;

    // Timeouts: TimeoutStrategyOptions.Timeout, [Range("00:00:00.010", "1.00:00:00")].
    let total_path = strategy_path(&base, total.as_ref(), "TotalRequestTimeout");
    let attempt_path = strategy_path(&base, attempt.as_ref(), "AttemptTimeout");
    let total_t = timespan_val(
        &src,
        total.as_ref(),
        &total_path,
        "Timeout",
        30 * TICKS_PER_S,
        "30 s (Polly's TimeoutStrategyOptions.Timeout)",
    )?;
    let attempt_t = timespan_val(
        &src,
        attempt.as_ref(),
        &attempt_path,
        "Timeout",
        10 * TICKS_PER_S,
        "10 s (HttpStandardResilienceOptions.AttemptTimeout)",
    )?;
    range_ticks(&src, &total_t, at, "Timeout", 10 * 10_000, DAY)?;
    range_ticks(&src, &attempt_t, at, "Timeout", 10 * 10_000, DAY)?;

    // Retry: RetryStrategyOptions<T> and HttpRetryStrategyOptions' constructor.
    let retry_path = strategy_path(&base, retry.as_ref(), "Retry");
    let rs = retry.as_ref();
    let attempts = match rs.and_then(|s| s.field("MaxRetryAttempts")) {
        Some((path, n)) => Val { value: int32(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: 3,
            node: None,
            path: join(&retry_path, "MaxRetryAttempts"),
            default_from: "3 (Polly's RetryConstants.DefaultRetryCount)",
        },
    };
    if attempts.value < 1 {
        return Err(src.err(
            attempts.pos(at),
            &attempts.path,
            format!("The field MaxRetryAttempts must be between 1 and 2147483647. (Polly's [Range]; found {}, refused at start-up)", attempts.value),
        ));
    }
    if attempts.value + 1 > MAX_ATTEMPTS {
        return Err(src.err(
            attempts.pos(at),
            &attempts.path,
            format!(
                "{} retries are {} attempts; faultline's retry.max_attempts is at most {MAX_ATTEMPTS} (.NET takes it)",
                attempts.value,
                attempts.value + 1
            ),
        ));
    }
    const BACKOFFS: [&str; 3] = ["Constant", "Linear", "Exponential"];
    let kind = match rs.and_then(|s| s.field("BackoffType")) {
        Some((path, n)) => Val {
            value: enumeration(&src, &path, n, "Polly.DelayBackoffType", &BACKOFFS)?,
            node: Some(n),
            path,
            default_from: "",
        },
        None => Val {
            value: 2,
            node: None,
            path: join(&retry_path, "BackoffType"),
            default_from: "Exponential (HttpRetryStrategyOptions' constructor; Polly's own default is Constant)",
        },
    };
    let jitter = match rs.and_then(|s| s.field("UseJitter")) {
        Some((path, n)) => Val { value: boolean(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: true,
            node: None,
            path: join(&retry_path, "UseJitter"),
            default_from: "true (HttpRetryStrategyOptions' constructor; Polly's own default is false)",
        },
    };
    let retry_after = match rs.and_then(|s| s.field("ShouldRetryAfterHeader")) {
        Some((path, n)) => Val { value: boolean(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: true,
            node: None,
            path: join(&retry_path, "ShouldRetryAfterHeader"),
            default_from: "true (HttpRetryStrategyOptions' constructor)",
        },
    };
    let delay =
        timespan_val(&src, rs, &retry_path, "Delay", 2 * TICKS_PER_S, "2 s (Polly's RetryConstants.DefaultBaseDelay)")?;
    range_ticks(&src, &delay, at, "Delay", 0, DAY)?;
    let max_delay = match rs.and_then(|s| s.field("MaxDelay")) {
        Some((path, n)) => {
            let v = Val { value: timespan(&src, &path, n)?, node: Some(n), path, default_from: "" };
            range_ticks(&src, &v, at, "MaxDelay", 0, DAY)?;
            Some(v)
        }
        None => None,
    };

    // Circuit breaker: CircuitBreakerStrategyOptions<T>.
    let cb_path = strategy_path(&base, cb.as_ref(), "CircuitBreaker");
    let cs = cb.as_ref();
    let ratio = match cs.and_then(|s| s.field("FailureRatio")) {
        Some((path, n)) => Val { value: double(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: 0.1,
            node: None,
            path: join(&cb_path, "FailureRatio"),
            default_from: "0.1 (Polly's CircuitBreakerConstants.DefaultFailureRatio)",
        },
    };
    if !(0.0..=1.0).contains(&ratio.value) {
        return Err(src.err(
            ratio.pos(at),
            &ratio.path,
            format!(
                "The field FailureRatio must be between 0 and 1. (Polly's [Range]; found {}, refused at start-up)",
                toml_number(ratio.value)
            ),
        ));
    }
    let throughput = match cs.and_then(|s| s.field("MinimumThroughput")) {
        Some((path, n)) => Val { value: int32(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: 100,
            node: None,
            path: join(&cb_path, "MinimumThroughput"),
            default_from: "100 (Polly's CircuitBreakerConstants.DefaultMinimumThroughput)",
        },
    };
    if throughput.value < 2 {
        return Err(src.err(
            throughput.pos(at),
            &throughput.path,
            format!("The field MinimumThroughput must be between 2 and 2147483647. (Polly's [Range]; found {}, refused at start-up)", throughput.value),
        ));
    }
    let sampling = timespan_val(
        &src,
        cs,
        &cb_path,
        "SamplingDuration",
        30 * TICKS_PER_S,
        "30 s (Polly's CircuitBreakerConstants.DefaultSamplingDuration)",
    )?;
    range_ticks(&src, &sampling, at, "SamplingDuration", 500 * TICKS_PER_MS, DAY)?;
    let brk = timespan_val(
        &src,
        cs,
        &cb_path,
        "BreakDuration",
        5 * TICKS_PER_S,
        "5 s (Polly's CircuitBreakerConstants.DefaultBreakDuration)",
    )?;
    range_ticks(&src, &brk, at, "BreakDuration", 500 * TICKS_PER_MS, DAY)?;

    // Rate limiter: RateLimiterStrategyOptions.DefaultRateLimiterOptions, a ConcurrencyLimiterOptions.
    let rl_path = strategy_path(&base, rl.as_ref(), "RateLimiter");
    let limiter = match rl.as_ref().and_then(|s| s.field("DefaultRateLimiterOptions")) {
        Some((path, n)) => {
            let m = members(&src, &path, n)?;
            for (k, v) in m {
                if !["PermitLimit", "QueueLimit", "QueueProcessingOrder"].iter().any(|x| x.eq_ignore_ascii_case(k)) {
                    return Err(src.err(
                        v.pos,
                        &join(&path, k),
                        format!("'ErrorOnUnknownConfiguration' was set on the provided BinderOptions, but the following properties were not found on the instance of System.Threading.RateLimiting.ConcurrencyLimiterOptions: '{k}'"),
                    ));
                }
            }
            Some(Strategy { path, members: m })
        }
        None => None,
    };
    let lim_path = limiter.as_ref().map_or_else(|| join(&rl_path, "DefaultRateLimiterOptions"), |l| l.path.clone());
    let permits = match limiter.as_ref().and_then(|s| s.field("PermitLimit")) {
        Some((path, n)) => Val { value: int32(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: 1000,
            node: None,
            path: join(&lim_path, "PermitLimit"),
            default_from: "1000 (Polly's RateLimiterConstants.DefaultPermitLimit)",
        },
    };
    if permits.value <= 0 {
        return Err(src.err(
            permits.pos(at),
            &permits.path,
            format!("PermitLimit must be set to a value greater than 0. (ConcurrencyLimiter's constructor throws when the pipeline is built; found {})", permits.value),
        ));
    }
    let queue = match limiter.as_ref().and_then(|s| s.field("QueueLimit")) {
        Some((path, n)) => Val { value: int32(&src, &path, n)?, node: Some(n), path, default_from: "" },
        None => Val {
            value: 0,
            node: None,
            path: join(&lim_path, "QueueLimit"),
            default_from: "0 (Polly's RateLimiterConstants.DefaultQueueLimit)",
        },
    };
    if queue.value < 0 {
        return Err(src.err(
            queue.pos(at),
            &queue.path,
            format!("QueueLimit must be set to a value greater than or equal to 0. (ConcurrencyLimiter's constructor throws when the pipeline is built; found {})", queue.value),
        ));
    }
    let order = match limiter.as_ref().and_then(|s| s.field("QueueProcessingOrder")) {
        Some((path, n)) => Some((
            enumeration(
                &src,
                &path,
                n,
                "System.Threading.RateLimiting.QueueProcessingOrder",
                &["OldestFirst", "NewestFirst"],
            )?,
            path,
            n,
        )),
        None => None,
    };

    // HttpStandardResilienceOptionsCustomValidator: the two cross-field rules, at start-up.
    if attempt_t.value > total_t.value {
        let (v, other) = if attempt_t.node.is_some() { (&attempt_t, &total_t) } else { (&total_t, &attempt_t) };
        return Err(src.err(
            v.pos(at),
            &v.path,
            format!(
                "Total request timeout resilience strategy must have a greater timeout than the attempt resilience strategy. Total Request Timeout: {}s, Attempt Timeout: {}s (HttpStandardResilienceOptionsCustomValidator; {} is {})",
                seconds(total_t.value),
                seconds(attempt_t.value),
                other.path,
                if other.node.is_some() { "set in the file" } else { "its default" }
            ),
        ));
    }
    if (sampling.value as i128) < 2 * attempt_t.value as i128 {
        let v = if sampling.node.is_some() { &sampling } else { &attempt_t };
        return Err(src.err(
            v.pos(at),
            &v.path,
            format!(
                "The sampling duration of circuit breaker strategy needs to be at least double of an attempt timeout strategy’s timeout interval, in order to be effective. Sampling Duration: {}s,Attempt Timeout: {}s (HttpStandardResilienceOptionsCustomValidator)",
                seconds(sampling.value),
                seconds(attempt_t.value)
            ),
        ));
    }

    // The fragment.
    let mut not_mapped = Vec::new();
    let mut fragment = Fragment::default();
    fragment.header.push(
        "faultline import dotnet-resilience (Microsoft.Extensions.Http.Resilience 10.x AddStandardResilienceHandler, Polly 8.4.2; docs/import.md)".into(),
    );
    fragment.header.push(format!("file: {name}"));
    fragment.header.push(format!("section: {shown_base}{}", if section.is_some() { " (--section)" } else { "" }));
    fragment
        .header
        .push("pipeline: RateLimiter -> TotalRequestTimeout -> Retry -> CircuitBreaker -> AttemptTimeout".into());
    fragment.header.push(format!(
        "applies to every dependency of policy {policy}: one breaker and one limiter each, as one pipeline per named HttpClient"
    ));
    let p = format!("policy.{policy}");
    let mut top = vec![Field {
        key: "timeout_ms".into(),
        value: toml_number(ms(attempt_t.value)),
        comment: format!("{}; per attempt, as AttemptTimeout is", attempt_t.comment(&src)),
    }];
    top.push(Field {
        key: "on_effect_unknown".into(),
        value: "\"retry\"".into(),
        comment: "the standard handler retries a timed-out attempt whatever its HTTP method (ShouldHandle does not look at it)".into(),
    });
    not_mapped.push(format!(
        "{}: the total timeout spans every attempt and sleep and ends the call (TimeoutRejectedException, never retried); faultline has no per-call timeout across attempts, only the per-attempt timeout_ms and the workflow's deadline_ms for the whole run (docs/scenario.md 8.5)",
        match total_t.node {
            Some(n) => src.at(&total_t.path, n),
            None => format!("{} = {} (default)", total_t.path, show(total_t.value)),
        }
    ));

    let mut retry_fields = vec![Field {
        key: "max_attempts".into(),
        value: (attempts.value + 1).to_string(),
        comment: format!("{}; MaxRetryAttempts + 1 (the first attempt)", attempts.comment(&src)),
    }];
    retry_fields.push(Field {
        key: "retry_on".into(),
        value: "[\"RATE_LIMITED\", \"OVERLOADED\", \"TRANSIENT_TRANSPORT\"]".into(),
        comment: "HttpClientResiliencePredicates.IsTransient: 429 -> RATE_LIMITED, 503 -> OVERLOADED, 408, 502, 504, HttpRequestException and TimeoutRejectedException -> TRANSIENT_TRANSPORT".into(),
    });
    retry_fields.push(Field {
        key: "honor_retry_after".into(),
        value: retry_after.value.to_string(),
        comment: retry_after.comment(&src),
    });
    not_mapped.push(format!(
        "{} retried statuses: .NET retries every status from 500 up; faultline never retries PERMANENT_PROVIDER (a 500 or 501 in the error mix), and gives up on a TRANSIENT_TRANSPORT write that is not deduplicated, where .NET sends it again",
        retry_path
    ));
    if retry_after.value {
        not_mapped.push(format!(
            "{}: .NET sleeps a Retry-After on any retried response (a 503 too) and ignores MaxDelay for it; faultline sleeps a Retry-After after RATE_LIMITED only",
            retry_after.path
        ));
    }
    let mut backoff = Vec::new();
    let b = Backoff { retries: &attempts, kind: &kind, jitter: &jitter, delay: &delay, max_delay: max_delay.as_ref() };
    map_backoff(&src, &b, &mut backoff, &mut not_mapped);

    let mut breaker =
        vec![Field { key: "kind".into(), value: "\"polly\"".into(), comment: "Polly v8's circuit breaker".into() }];
    let (ratio_value, ratio_note) = if ratio.value == 0.0 {
        (
            "0.000000001".to_string(),
            "; Polly's 0 breaks at the first handled failure once MinimumThroughput calls are in the record: faultline needs > 0, and 1e-9 does the same below a billion calls",
        )
    } else {
        (toml_number(ratio.value), "")
    };
    breaker.push(Field {
        key: "failure_ratio".into(),
        value: ratio_value,
        comment: format!("{}{ratio_note}", ratio.comment(&src)),
    });
    breaker.push(Field {
        key: "minimum_throughput".into(),
        value: throughput.value.to_string(),
        comment: throughput.comment(&src),
    });
    breaker.push(Field {
        key: "sampling_duration_ms".into(),
        value: toml_number(ms(sampling.value)),
        comment: sampling.comment(&src),
    });
    breaker.push(Field {
        key: "break_duration_ms".into(),
        value: toml_number(ms(brk.value)),
        comment: brk.comment(&src),
    });
    breaker.push(Field {
        key: "ignore".into(),
        value: "[\"INVALID_INPUT\", \"UNAUTHORIZED\", \"RESULT_INVALID\"]".into(),
        comment: "HttpCircuitBreakerStrategyOptions handles 408, 429, 5xx, HttpRequestException and timeouts only: other 4xx and a 2xx with an unusable body count as successes".into(),
    });

    let mut bulkhead = vec![Field {
        key: "max_concurrent_calls".into(),
        value: permits.value.to_string(),
        comment: format!("{}; a ConcurrencyLimiter", permits.comment(&src)),
    }];
    if queue.value == 0 {
        bulkhead.push(Field {
            key: "max_wait_ms".into(),
            value: "0".into(),
            comment: format!("{}: no queue, refused at once", queue.comment(&src)),
        });
    } else {
        bulkhead.push(Field {
            key: "max_wait_ms".into(),
            value: toml_number(ms(total_t.value)),
            comment: format!(
                "{}; a queued call waits without a time limit in .NET: written as the total request timeout",
                queue.comment(&src)
            ),
        });
        not_mapped.push(format!(
            "{} = {}: .NET queues at most that many calls and each waits until a permit frees or the caller cancels (the limiter is outside the total timeout); faultline's bulkhead bounds the wait in time (max_wait_ms, written as TotalRequestTimeout) and queues up to 10,000",
            queue.path, queue.value
        ));
    }
    if let Some((o, path, n)) = &order
        && *o == 1
    {
        not_mapped.push(format!("{}: faultline's bulkhead serves its queue oldest first", src.at(path, n)));
    }
    not_mapped.push(format!(
        "{rl_path} scope: the limiter is the outermost strategy, so a call holds its permit through every retry and sleep and a refusal never reaches the breaker; faultline's bulkhead holds a permit per attempt and stands after the breaker (docs/scenario.md 8.11)"
    ));
    for s in [&rl, &total, &retry, &cb, &attempt].into_iter().flatten() {
        if let Some((path, n)) = s.field("Name") {
            not_mapped.push(format!("{}: a telemetry name; no effect on calls", src.at(&path, n)));
        }
    }

    fragment.tables.push(Table { header: format!("[{p}]"), fields: top });
    fragment.tables.push(Table { header: format!("[{p}.retry]"), fields: retry_fields });
    fragment.tables.push(Table { header: format!("[{p}.retry.backoff]"), fields: backoff });
    fragment.tables.push(Table { header: format!("[[{p}.circuit_breaker]]"), fields: breaker });
    fragment.tables.push(Table { header: format!("[[{p}.bulkhead]]"), fields: bulkhead });
    fragment.not_mapped = not_mapped;
    Ok(fragment)
}

struct Backoff<'a, 'n> {
    retries: &'a Val<'n, i64>,
    kind: &'a Val<'n, usize>,
    jitter: &'a Val<'n, bool>,
    delay: &'a Val<'n, i64>,
    max_delay: Option<&'a Val<'n, i64>>,
}

fn field(key: &str, value: String, comment: String) -> Field {
    Field { key: key.into(), value, comment }
}

/// Polly's RetryHelper.GetRetryDelay: Constant `Delay`, Linear `Delay x (attempt + 1)`,
/// Exponential `Delay x 2^attempt`, then capped at MaxDelay; a zero Delay never sleeps. With
/// UseJitter, Constant and Linear sleep uniformly in [0.75, 1.25) x the delay (ApplyJitter,
/// JitterFactor 0.5), and Exponential draws DecorrelatedJitterBackoffV2, which faultline does
/// not have: it is written as full jitter, its nearest (docs/import.md, departures).
fn map_backoff(src: &Src, b: &Backoff, fields: &mut Vec<Field>, not_mapped: &mut Vec<String>) {
    let d = b.delay.value;
    let retries = b.retries.value;
    let cap = b.max_delay.map(|m| m.value);
    let capped = |x: f64| cap.map_or(x, |c| x.min(ms(c)));
    let kind_c = b.kind.comment(src);
    if d == 0 {
        fields.push(field(
            "kind",
            "\"none\"".into(),
            format!("{}: Polly never sleeps with a zero Delay", b.delay.comment(src)),
        ));
        return;
    }
    let jitter_c = b.jitter.comment(src);
    match b.kind.value {
        // Constant and Linear.
        0 | 1 => {
            let sleeps: Vec<f64> =
                (1..=retries).map(|k| capped(ms(d) * if b.kind.value == 0 { 1.0 } else { k as f64 })).collect();
            let mean = sleeps.iter().sum::<f64>() / sleeps.len() as f64;
            let mean = (mean * 1000.0).round() / 1000.0;
            fields.push(field("kind", "\"constant\"".into(), kind_c));
            let base_c = if b.kind.value == 0 {
                match b.max_delay {
                    Some(m) if m.value < d => format!("{}; capped at MaxDelay", m.comment(src)),
                    _ => b.delay.comment(src),
                }
            } else {
                format!(
                    "{}; the mean of Linear's {retries} sleeps (Delay x 1..{retries}), see NOT MAPPED",
                    b.delay.comment(src)
                )
            };
            fields.push(field("base_ms", toml_number(mean), base_c));
            if b.kind.value == 1 && retries > 1 {
                let shown: Vec<String> = sleeps.iter().map(|x| toml_number(*x)).collect();
                not_mapped.push(format!(
                    "{}: faultline has no linear backoff; .NET sleeps {} ms, written as a constant {} ms so that the sleeps add up to the same",
                    src.at(&b.kind.path, b.kind.node.expect("Linear is never the default")),
                    shown.join(", "),
                    toml_number(mean)
                ));
            }
            if b.jitter.value {
                fields.push(field(
                    "jitter",
                    "\"randomized\"".into(),
                    format!("{jitter_c}; ApplyJitter: uniform in [0.75, 1.25) x the delay"),
                ));
                fields.push(field(
                    "randomization_factor",
                    "0.25".into(),
                    "Polly's JitterFactor 0.5, half of it either side (RetryHelper.ApplyJitter)".into(),
                ));
                if let Some(m) = b.max_delay
                    && ms(m.value) < 1.25 * sleeps.iter().cloned().fold(0.0, f64::max)
                {
                    not_mapped.push(format!(
                        "{}: Polly caps the jittered sleep at MaxDelay; faultline jitters the capped one, up to 1.25 x MaxDelay",
                        src.at(&m.path, m.node.expect("set"))
                    ));
                }
            } else {
                fields.push(field("jitter", "\"none\"".into(), jitter_c));
            }
        }
        _ => {
            let largest = ms(d) * 2f64.powi((retries - 1) as i32);
            match b.max_delay {
                Some(m) if m.value <= d => {
                    fields.push(field(
                        "kind",
                        "\"constant\"".into(),
                        format!("{kind_c}; MaxDelay <= Delay: every sleep is MaxDelay"),
                    ));
                    fields.push(field("base_ms", toml_number(ms(m.value)), m.comment(src)));
                }
                _ => {
                    fields.push(field("kind", "\"exponential\"".into(), format!("{kind_c}; Delay x 2^attempt")));
                    fields.push(field("base_ms", toml_number(ms(d)), b.delay.comment(src)));
                    match b.max_delay {
                        Some(m) => fields.push(field("max_ms", toml_number(ms(m.value)), m.comment(src))),
                        None => fields.push(field(
                            "max_ms",
                            toml_number(largest),
                            format!("MaxDelay absent: none in Polly; {} retries sleep at most Delay x 2^{}, written as the cap", retries, retries - 1),
                        )),
                    }
                }
            }
            let capped_below_delay = matches!(b.max_delay, Some(m) if m.value <= d);
            if b.jitter.value && capped_below_delay {
                // Polly caps each decorrelated draw at MaxDelay (RetryHelper), and the draws are
                // mostly above it: nearly every sleep is MaxDelay, not a uniform draw under it.
                fields.push(field(
                    "jitter",
                    "\"none\"".into(),
                    format!("{jitter_c}; MaxDelay <= Delay: Polly's jittered draws are capped at MaxDelay, so nearly every sleep is MaxDelay (NOT MAPPED)"),
                ));
                not_mapped.push(format!(
                    "{}: with MaxDelay <= Delay, Polly's DecorrelatedJitterBackoffV2 draws capped at MaxDelay average a little under it (0.96, 0.96, 0.99 x MaxDelay for the first three retries at Delay = 2 x MaxDelay); written as exactly MaxDelay",
                    match b.jitter.node {
                        Some(n) => src.at(&b.jitter.path, n),
                        None => format!("{} = true (default)", b.jitter.path),
                    }
                ));
            } else if b.jitter.value {
                fields.push(field(
                    "jitter",
                    "\"full\"".into(),
                    format!("{jitter_c}; Polly draws DecorrelatedJitterBackoffV2, written as full jitter, its nearest (NOT MAPPED)"),
                ));
                not_mapped.push(format!(
                    "{}: Polly's exponential jitter is DecorrelatedJitterBackoffV2 (RetryHelper.cs), which faultline does not have. Its mean sleeps are 0.87, 1.16, 2.08, 4.13, 8.24 x Delay for retries 1 to 5 (each at most 1.38, 2.81, 4.31, 8.58, 17.1 x Delay); full jitter's are 0.5, 1, 2, 4, 8 x Delay (at most 1, 2, 4, 8, 16): within 4 % from the third retry on, but the first sleep is 0.37 x Delay shorter on average{}",
                    match b.jitter.node {
                        Some(n) => src.at(&b.jitter.path, n),
                        None => format!("{} = true (default)", b.jitter.path),
                    },
                    if b.max_delay.is_some() { "; Polly caps the drawn sleep at MaxDelay, faultline draws under the capped value" } else { "" }
                ));
            } else {
                fields.push(field("jitter", "\"none\"".into(), jitter_c));
            }
        }
    }
}
