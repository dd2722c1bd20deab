//! `faultline import litellm FILE`: a LiteLLM proxy `config.yaml` (`model_list`,
//! `router_settings`, `litellm_settings`) or a YAML of `Router(...)` keyword arguments
//! (`model_list` and the settings at the top), as litellm 1.110.2's Router reads them
//! (docs/import.md). Each model group is one faultline dependency called through an
//! `sdk_client` with the `litellm-router` preset (the router retries inside the caller); its
//! fallbacks are the step's `fallbacks`; what the model has no mechanism for (cooldowns,
//! per-error retry counts, routing among a group's deployments) is listed under NOT MAPPED with
//! why. The file is read by the YAML reader of the Spring importer (spring.rs): nested keys
//! joined by `.`, list items as `key[i]`, each value with its line and column.

use super::fragment::{Field, Fragment, Table, toml_number};
use super::spring::{Entry, read_yaml};

/// What the importer is told besides the file.
pub struct LitellmOptions<'a> {
    /// The file as the user named it (errors), and its own name (comments).
    pub shown: &'a str,
    pub name: &'a str,
    pub policy: &'a str,
    /// `GROUP=DEPENDENCY` pairs; a group not named maps to a dependency of its own name.
    pub dependencies: &'a [(String, String)],
}

struct Group {
    name: String,
    dependency: String,
    why: String,
    /// Each deployment's `litellm_params` entries (index in model_list, entries).
    deployments: Vec<(usize, Vec<Entry>)>,
}

/// One setting looked up in `router_settings` first, then `litellm_settings` (the process-wide
/// value `litellm/router_config.py` `RouterDynamicConfig` reads when the Router was given none).
struct Settings<'a> {
    router: Vec<&'a Entry>,
    process: Vec<&'a Entry>,
    router_prefix: &'static str,
}

impl<'a> Settings<'a> {
    fn get(&self, key: &str) -> Option<&'a Entry> {
        let r = self.router.iter().find(|e| e.key == format!("{}{key}", self.router_prefix)).copied();
        r.or_else(|| self.process.iter().find(|e| e.key == format!("litellm_settings.{key}")).copied())
    }

    /// Entries of a list setting (`key[...]...`) from the first level that has any.
    fn list(&self, key: &str) -> Vec<&'a Entry> {
        let r = format!("{}{key}[", self.router_prefix);
        let from_router: Vec<&Entry> = self.router.iter().filter(|e| e.key.starts_with(&r)).copied().collect();
        if !from_router.is_empty() {
            return from_router;
        }
        let p = format!("litellm_settings.{key}[");
        self.process.iter().filter(|e| e.key.starts_with(&p)).copied().collect()
    }
}

fn field(key: &str, value: String, comment: String) -> Field {
    Field { key: key.to_string(), value, comment }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A TOML key: bare when it can be, quoted otherwise.
fn toml_key(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        s.to_string()
    } else {
        quote(s)
    }
}

/// A faultline dependency name for a model group: letters, digits, `_` and `-`; any other
/// character becomes `-` (and the header says so).
fn dependency_name(group: &str) -> String {
    group.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect()
}

struct Src<'a> {
    shown: &'a str,
    name: &'a str,
}

impl Src<'_> {
    fn at(&self, e: &Entry) -> String {
        format!("{} ({}:{}) = {}", e.key, self.name, e.line, e.value)
    }

    fn err(&self, e: &Entry, why: impl std::fmt::Display) -> String {
        format!("{}:{}:{}: {}: {why}", self.shown, e.line, e.col, e.key)
    }
}

/// A value read from the environment at start (`os.environ/NAME`) is not in the file.
fn from_env(e: &Entry) -> bool {
    e.value.starts_with("os.environ/")
}

/// The faultline failure kind of a `RetryPolicy` field (litellm/types/router.py), or `timeout`.
fn retry_policy_kind(field: &str) -> Option<&'static str> {
    Some(match field {
        "BadRequestErrorRetries" => "invalid_input",
        "AuthenticationErrorRetries" => "unauthorized",
        "TimeoutErrorRetries" => "timeout",
        "RateLimitErrorRetries" => "rate_limited",
        "InternalServerErrorRetries" => "permanent_provider",
        "ServiceUnavailableErrorRetries" => "overloaded",
        _ => return None,
    })
}

/// A number PyYAML (YAML 1.1) reads unquoted otherwise than LiteLLM reads it quoted: a leading
/// 0 (octal), `0x`/`0b`, `_` separators or base 60 (`1:30`). The reader keeps no quotes, so
/// which the file meant is unknown: refused rather than guessed.
fn ambiguous_number(text: &str) -> bool {
    let t = text.trim().trim_start_matches(['+', '-']);
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '_');
    let leading_zero = t.len() > 1 && t.starts_with('0') && !t.starts_with("0.") && digits(t);
    let prefixed = t.starts_with("0x") || t.starts_with("0b");
    let separated = t.contains('_') && t.chars().all(|c| c.is_ascii_digit() || c == '_' || c == '.');
    let sexagesimal = t.contains(':') && t.split(':').all(|p| digits(p.split('.').next().unwrap_or(p)));
    leading_zero || prefixed || separated || sexagesimal
}

fn check_plain_number(src: &Src, e: &Entry) -> Result<(), String> {
    if ambiguous_number(&e.value) {
        return Err(src.err(
            e,
            format!(
                "`{}` is a YAML 1.1 number (octal, hex, binary, `_` separators or base 60) that PyYAML reads otherwise unquoted than LiteLLM does quoted: write it as a plain decimal",
                e.value
            ),
        ));
    }
    Ok(())
}

/// A count as the Router reads it (`router_rust/core.py` `_lenient_int`): a YAML boolean is 0
/// or 1, a number spelled with a fraction is truncated (`3.0` is 3); refused otherwise (the
/// Router would quietly take its default), or when a fraction would be dropped.
fn whole(src: &Src, e: &Entry, max: u64) -> Result<u64, String> {
    check_plain_number(src, e)?;
    let v = e.value.trim();
    let n: u64 = match v {
        "true" | "True" | "TRUE" => 1,
        "false" | "False" | "FALSE" => 0,
        _ => match (v.parse::<u64>(), v.parse::<f64>()) {
            (Ok(n), _) => n,
            (Err(_), Ok(f)) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 => f as u64,
            (Err(_), Ok(f)) if f.is_finite() && f >= 0.0 => {
                return Err(src.err(
                    e,
                    format!("LiteLLM truncates `{v}` to {}: write {} if that is meant", f.trunc(), f.trunc()),
                ));
            }
            _ => {
                return Err(src.err(
                    e,
                    format!("expected a whole number >= 0, found `{v}` (LiteLLM would silently take its default)"),
                ));
            }
        },
    };
    if n > max {
        return Err(src.err(e, format!("at most {max} (faultline's bound), found {n}")));
    }
    Ok(n)
}

/// A number of seconds (`30`, `0.5`), >= 0; refused otherwise.
fn seconds(src: &Src, e: &Entry) -> Result<f64, String> {
    check_plain_number(src, e)?;
    match e.value.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=3_600_000.0).contains(&s) => Ok(s),
        _ => Err(src.err(e, format!("expected a number of seconds >= 0, found `{}`", e.value))),
    }
}

/// A `fallbacks` entry's item index and group: `...fallbacks[i].GROUP[j]` (GROUP may hold
/// dots); None for an entry whose target is not a list.
fn fallback_group(e: &Entry) -> Option<(&str, &str)> {
    let at = e.key.find("fallbacks[")? + "fallbacks[".len();
    let (index, tail) = e.key[at..].split_once("].")?;
    let (group, _) = tail.rsplit_once('[')?;
    Some((index, group))
}

/// The shapes the Router refuses when it is made (`router_rust/surface/fallbacks.py`
/// `refuse_malformed_fallbacks`): each item one group, mapped to a list.
fn check_fallbacks(src: &Src, own: &[&Entry]) -> Result<(), String> {
    let mut first_of: Vec<(&str, &str)> = Vec::new();
    for e in own {
        let Some((index, group)) = fallback_group(e) else {
            return Err(src.err(e, "a fallback's target must be a list of model groups (the Router raises TypeError)"));
        };
        match first_of.iter().find(|(i, _)| *i == index) {
            Some((_, g)) if *g != group => {
                return Err(src.err(
                    e,
                    "each fallbacks item must have exactly one key, a model group (the Router raises ValueError)",
                ));
            }
            Some(_) => {}
            None => first_of.push((index, group)),
        }
    }
    Ok(())
}

/// A YAML null (`~`, `null`, nothing) for a Router setting is `None`: the default applies.
fn is_null(e: &Entry) -> bool {
    e.value.trim().is_empty()
}

pub fn import(text: &str, o: &LitellmOptions) -> Result<Fragment, String> {
    let src = Src { shown: o.shown, name: o.name };
    let file = read_yaml(text).map_err(|(line, col, why)| format!("{}:{line}:{col}: {why}", o.shown))?;
    // litellm reads its config with PyYAML's safe_load, which refuses a stream of documents.
    if let Some(second) = file.documents.get(1) {
        let at = second.first().map_or(String::new(), |e| format!(":{}:{}", e.line, e.col));
        return Err(format!(
            "{}{at}: a LiteLLM config is one YAML document (litellm's yaml.safe_load refuses a second), found {}",
            o.shown,
            file.documents.len()
        ));
    }
    let entries: &[Entry] = file.documents.first().map_or(&[], Vec::as_slice);
    let proxy = entries
        .iter()
        .any(|e| ["router_settings.", "litellm_settings.", "general_settings."].iter().any(|p| e.key.starts_with(p)));
    let router_prefix = if proxy { "router_settings." } else { "" };

    // model_list: groups in the order they first appear.
    let mut groups: Vec<Group> = Vec::new();
    let mut i = 0;
    loop {
        let prefix = format!("model_list[{i}].");
        let item: Vec<&Entry> = entries.iter().filter(|e| e.key.starts_with(&prefix)).collect();
        if item.is_empty() {
            break;
        }
        let name = item.iter().find(|e| e.key == format!("{prefix}model_name")).ok_or_else(|| {
            src.err(item[0], format!("model_list[{i}] has no model_name (LiteLLM's Deployment requires it)"))
        })?;
        if name.value.is_empty() {
            return Err(src.err(name, "an empty model_name"));
        }
        let params_prefix = format!("{prefix}litellm_params.");
        // Its litellm_params, and the two other places the router reads a deployment's rpm
        // (`lowest_tpm_rpm_v2.py`: the deployment's own `rpm`, then litellm_params', then
        // model_info's).
        let rpm_elsewhere = [format!("{prefix}rpm"), format!("{prefix}model_info.rpm")];
        let params: Vec<Entry> = item
            .iter()
            .filter(|e| e.key.starts_with(&params_prefix) || rpm_elsewhere.contains(&e.key))
            .map(|e| (*e).clone())
            .collect();
        if !params.iter().any(|e| e.key == format!("{params_prefix}model")) {
            return Err(src.err(
                name,
                format!("model_list[{i}] has no litellm_params.model (LiteLLM's LiteLLM_Params requires it)"),
            ));
        }
        match groups.iter_mut().find(|g| g.name == name.value) {
            Some(g) => g.deployments.push((i, params)),
            None => groups.push(Group {
                name: name.value.clone(),
                dependency: String::new(),
                why: String::new(),
                deployments: vec![(i, params)],
            }),
        }
        i += 1;
    }
    if groups.is_empty() {
        return Err(format!("{}:1:1: model_list: no deployment (a LiteLLM router needs at least one)", o.shown));
    }
    for (g, _) in o.dependencies {
        if !groups.iter().any(|x| &x.name == g) {
            let names: Vec<&str> = groups.iter().map(|x| x.name.as_str()).collect();
            return Err(format!(
                "argument `--dependency {g}=...`: {} has no model group named `{g}` (groups: {})",
                o.shown,
                names.join(", ")
            ));
        }
    }
    for g in &mut groups {
        match o.dependencies.iter().rev().find(|(x, _)| *x == g.name) {
            Some((_, d)) => {
                g.dependency = d.clone();
                g.why = format!("model group {}, mapped by --dependency {}={d}", g.name, g.name);
            }
            None => {
                g.dependency = dependency_name(&g.name);
                g.why = if g.dependency == g.name {
                    format!(
                        "model group {}: the dependency of the same name (--dependency {}=DEPENDENCY to change it)",
                        g.name, g.name
                    )
                } else {
                    format!(
                        "model group {}: renamed to a faultline name (--dependency {}=DEPENDENCY to change it)",
                        g.name, g.name
                    )
                };
            }
        }
    }

    let settings = Settings {
        router: entries
            .iter()
            .filter(|e| if proxy { e.key.starts_with("router_settings.") } else { !e.key.starts_with("model_list") })
            .collect(),
        process: entries.iter().filter(|e| e.key.starts_with("litellm_settings.")).collect(),
        router_prefix,
    };
    let outside = entries
        .iter()
        .filter(|e| {
            proxy && !["model_list", "router_settings.", "litellm_settings."].iter().any(|p| e.key.starts_with(p))
        })
        .count();

    let p = o.policy;
    let mut frag = Fragment::default();
    let mut not_mapped: Vec<String> = Vec::new();
    frag.header.push("faultline import litellm (semantics of litellm 1.110.2's Router; docs/import.md)".into());
    frag.header.push(format!(
        "file: {} ({})",
        o.name,
        if proxy { "a proxy config: router_settings, then litellm_settings" } else { "Router keyword arguments" }
    ));
    for g in &groups {
        frag.header.push(format!(
            "model group {} -> dependency {} ({} deployment{})",
            g.name,
            g.dependency,
            g.deployments.len(),
            if g.deployments.len() == 1 { "" } else { "s" }
        ));
    }
    frag.header.push("fallbacks are written for the step named like the group's dependency (a LiteLLM config names no steps): rename steps.<name> to the step that calls it".into());
    if outside > 0 {
        frag.header
            .push(format!("keys outside model_list, router_settings and litellm_settings (not read): {outside}"));
    }

    // The application calls the router once: the runtime neither retries it nor bounds it.
    frag.tables.push(Table {
        header: format!("[policy.{p}]"),
        fields: vec![field("timeout_ms", "0".into(), "the application's own deadline around the router call is not in this file (each attempt's is the sdk_client's timeout_ms)".into())],
    });
    frag.tables.push(Table {
        header: format!("[policy.{p}.retry]"),
        fields: vec![field(
            "max_attempts",
            "1".into(),
            "the router retries inside the call (the sdk_client tables); the application does not retry the router"
                .into(),
        )],
    });

    // The router's retries: one sdk_client per group, the same settings for each.
    let mut common = vec![field("preset", quote("litellm-router"), "litellm 1.110.2's Router: 2 retries, 0.5 s x 2^n capped at 8 s plus up to 0.75 s, whole-second Retry-After up to 60 s (docs/scenario.md 8.18)".into())];
    for (key, name) in [
        ("num_retries", "max_retries"),
        ("retry_after", "min_delay_ms"),
        ("timeout", "timeout_ms"),
        ("request_timeout", "timeout_ms"),
    ] {
        let Some(e) = settings.get(key) else { continue };
        if is_null(e) {
            not_mapped.push(format!("{}: null, the Router's None: its default applies", src.at(e)));
            continue;
        }
        // `timeout or request_timeout` (router_rust/core.py): a router timeout of 0 is unset.
        let zero_timeout = |e: &Entry| e.value.trim().parse::<f64>().is_ok_and(|v| v == 0.0);
        if key == "timeout" && zero_timeout(e) {
            not_mapped.push(format!(
                "{}: 0 is unset for the Router (`timeout or request_timeout`): request_timeout applies",
                src.at(e)
            ));
            continue;
        }
        if key == "request_timeout" && settings.get("timeout").is_some_and(|t| !is_null(t) && !zero_timeout(t)) {
            not_mapped.push(format!("{}: the router's timeout is set and wins", src.at(e)));
            continue;
        }
        if from_env(e) {
            not_mapped
                .push(format!("{}: read from the environment when the proxy starts, not in this file", src.at(e)));
            continue;
        }
        let value = match key {
            "num_retries" => whole(&src, e, 100)?.to_string(),
            _ => {
                let s = seconds(&src, e)?;
                if s == 0.0 && key != "retry_after" {
                    return Err(src.err(e, "a timeout of 0 s (LiteLLM would time every call out)"));
                }
                toml_number(s * 1000.0)
            }
        };
        let capped = key == "retry_after" && value.parse::<f64>().is_ok_and(|ms| ms > 8000.0);
        let value = if capped { "8000".to_string() } else { value };
        let note = match key {
            "num_retries" => "",
            "retry_after" if capped => "; a floor above MAX_RETRY_DELAY (8 s), which caps it: every sleep is 8 s",
            "retry_after" => "; a floor under the backoff, before its 8 s cap",
            _ => "; each attempt's (the provider request's) timeout",
        };
        common.push(field(name, value, format!("from {}{note}", src.at(e))));
    }
    if settings.get("num_retries").is_none_or(is_null) {
        let why = "no num_retries: Router(num_retries=None) takes DEFAULT_MAX_RETRIES = 2 (litellm/constants.py), the preset's";
        common.insert(1, field("max_retries", "2".into(), why.into()));
    }
    let mut mapped_policy: Vec<String> = Vec::new();
    let policy_name = |group_prefix: &str, _cited: &[String]| {
        if settings.router.iter().any(|e| e.key.starts_with(group_prefix)) {
            group_prefix.trim_end_matches('.').to_string()
        } else {
            format!("{router_prefix}retry_policy")
        }
    };
    for g in &groups {
        let mut fields: Vec<Field> = common.iter().map(|f| field(&f.key, f.value.clone(), f.comment.clone())).collect();
        // A timeout every deployment of the group sets alike is the group's.
        let timeouts: Vec<Option<&Entry>> =
            g.deployments.iter().map(|(_, ps)| ps.iter().find(|e| e.key.ends_with("litellm_params.timeout"))).collect();
        if let Some(first) = timeouts.iter().flatten().next() {
            let all_same = timeouts.iter().all(|t| t.is_some_and(|t| t.value == first.value));
            if all_same && !from_env(first) {
                let s = seconds(&src, first)?;
                fields.retain(|f| f.key != "timeout_ms");
                fields.push(field(
                    "timeout_ms",
                    toml_number(s * 1000.0),
                    format!("from {}; the deployment's own, over the router's", src.at(first)),
                ));
            } else {
                not_mapped.push(format!(
                    "{}: the deployments of group {} have different timeouts (or some none); an sdk_client has one",
                    src.at(first),
                    g.name
                ));
            }
        }
        // A deployment's own num_retries (`router_rust/invoke/shaping.py`
        // `stamp_deployment_num_retries`) is the retry count for calls it serves.
        let counts: Vec<Option<&Entry>> = g
            .deployments
            .iter()
            .map(|(_, ps)| ps.iter().find(|e| e.key.ends_with("litellm_params.num_retries")))
            .collect();
        if let Some(first) = counts.iter().flatten().next() {
            let all_same = counts.iter().all(|c| c.is_some_and(|c| c.value == first.value));
            if all_same && !from_env(first) && !is_null(first) {
                let n = whole(&src, first, 100)?;
                fields.retain(|f| f.key != "max_retries");
                fields.insert(
                    1,
                    field(
                        "max_retries",
                        n.to_string(),
                        format!("from {}; the deployment's own, over the router's", src.at(first)),
                    ),
                );
            } else {
                not_mapped.push(format!(
                    "{}: the deployments of group {} have different num_retries (or some none); an sdk_client has one",
                    src.at(first),
                    g.name
                ));
            }
        }
        // retry_policy (model_group_retry_policy's entry for the group wins): a count per kind.
        let group_prefix = format!("{router_prefix}model_group_retry_policy.{}.", g.name);
        let router_policy = format!("{router_prefix}retry_policy.");
        let mut policy: Vec<&Entry> =
            settings.router.iter().filter(|e| e.key.starts_with(&group_prefix)).copied().collect();
        if policy.is_empty() {
            policy = settings.router.iter().filter(|e| e.key.starts_with(&router_policy)).copied().collect();
        }
        let mut counts: Vec<String> = Vec::new();
        let mut cited: Vec<String> = Vec::new();
        for e in policy {
            let name = e.key.rsplit('.').next().unwrap_or("");
            let Some(kind) = retry_policy_kind(name) else { continue };
            if from_env(e) || e.value == "null" || e.value.is_empty() {
                continue;
            }
            counts.push(format!("{kind} = {}", whole(&src, e, 100)?));
            cited.push(format!("{}:{}", o.name, e.line));
            mapped_policy.push(e.key.clone());
        }
        if !counts.is_empty() {
            fields.push(field(
                "max_retries_by_kind",
                format!("{{ {} }}", counts.join(", ")),
                format!(
                    "from {} ({}); retry_policy's count for the call's first failure, over max_retries",
                    policy_name(&group_prefix, &cited),
                    cited.join(", ")
                ),
            ));
        }
        frag.tables.push(Table { header: format!("[policy.{p}.sdk_client.{}]", toml_key(&g.dependency)), fields });
    }

    // Fallbacks: a group's own, else default_fallbacks.
    let dep_of = |name: &str| groups.iter().find(|g| g.name == name).map(|g| g.dependency.clone());
    let own = settings.list("fallbacks");
    check_fallbacks(&src, &own)?;
    if let Some(e) = settings.get("default_fallbacks")
        && !is_null(e)
    {
        // A scalar where a list belongs (router_rust/core.py: "default_fallbacks must be a list").
        return Err(src.err(e, "default_fallbacks must be a list of model groups (the Router raises TypeError)"));
    }
    // `{"*": [...]}` is every group's fallback: the form the Router itself stores
    // default_fallbacks in (router_rust/core.py).
    let star: Vec<&Entry> = own.iter().filter(|e| fallback_group(e).is_some_and(|(_, g)| g == "*")).copied().collect();
    let defaults = if star.is_empty() { settings.list("default_fallbacks") } else { star };
    // Groups with fallbacks of their own: `_has_fallback_group` reads `fallbacks` only, so a
    // group that falls back by default_fallbacks alone is still a lone deployment.
    let mut own_fallbacks: Vec<String> = Vec::new();
    for g in &groups {
        let mine: Vec<&Entry> =
            own.iter().filter(|e| fallback_group(e).is_some_and(|(_, group)| group == g.name)).copied().collect();
        if !mine.is_empty() {
            own_fallbacks.push(g.name.clone());
        }
        let (chosen, origin) =
            if mine.is_empty() { (defaults.clone(), "default_fallbacks") } else { (mine, "fallbacks") };
        let mut seen: Vec<String> = Vec::new();
        for e in chosen {
            if from_env(e) || e.value.is_empty() {
                continue;
            }
            let Some(dep) = dep_of(&e.value) else {
                not_mapped.push(format!(
                    "{}: a fallback to `{}`, which is no model group of model_list",
                    src.at(e),
                    e.value
                ));
                continue;
            };
            if dep == g.dependency || seen.contains(&dep) {
                continue;
            }
            seen.push(dep.clone());
            let note =
                if origin == "default_fallbacks" { "; default_fallbacks: the group sets none of its own" } else { "" };
            frag.tables.push(Table {
                header: format!("[[policy.{p}.steps.{}.fallbacks]]", toml_key(&g.dependency)),
                fields: vec![field("dependency", quote(&dep), format!("from {}{note}", src.at(e)))],
            });
        }
    }

    // rpm: a limit only where the router enforces it.
    let strategy = settings.get("routing_strategy").map(|e| e.value.clone()).unwrap_or_else(|| "simple-shuffle".into());
    let enforced = strategy.starts_with("usage-based-routing")
        || settings.list("optional_pre_call_checks").iter().any(|e| e.value == "enforce_model_rate_limits");
    for g in &groups {
        let rpms: Vec<Option<&Entry>> = g
            .deployments
            .iter()
            .map(|(i, ps)| {
                let at = |key: String| ps.iter().find(move |e| e.key == key);
                at(format!("model_list[{i}].rpm"))
                    .or_else(|| at(format!("model_list[{i}].litellm_params.rpm")))
                    .or_else(|| at(format!("model_list[{i}].model_info.rpm")))
            })
            .collect();
        let Some(Some(first)) = rpms.iter().find(|r| r.is_some()).copied() else { continue };
        if !enforced {
            not_mapped.push(format!("{}: with routing_strategy {strategy} and no enforce_model_rate_limits, rpm weighs the pick among deployments and limits nothing", src.at(first)));
            continue;
        }
        if rpms.iter().any(Option::is_none) {
            not_mapped.push(format!(
                "{}: some deployments of group {} set no rpm (no limit for them): the group has no limit",
                src.at(first),
                g.name
            ));
            continue;
        }
        let mut sum = 0u64;
        for r in rpms.iter().flatten() {
            sum += whole(&src, r, 1_000_000_000)?;
        }
        if sum == 0 {
            return Err(src.err(first, "an rpm of 0"));
        }
        let cited: Vec<String> = rpms.iter().flatten().map(|r| format!("{}:{}", o.name, r.line)).collect();
        frag.tables.push(Table {
            header: format!("[[policy.{p}.rate_limiter]]"),
            fields: vec![
                field("dependency", quote(&g.dependency), g.why.clone()),
                field(
                    "limit_for_period",
                    sum.to_string(),
                    format!(
                        "the sum of the group's rpm ({}); enforced by {}",
                        cited.join(", "),
                        if strategy.starts_with("usage-based-routing") {
                            strategy.as_str()
                        } else {
                            "enforce_model_rate_limits"
                        }
                    ),
                ),
                field(
                    "limit_refresh_period_ms",
                    "60000".into(),
                    "LiteLLM counts requests per deployment per minute".into(),
                ),
                field(
                    "timeout_duration_ms",
                    "0".into(),
                    "a request over the limit is refused at once (RateLimitError), never queued".into(),
                ),
            ],
        });
    }

    // Cooldowns: the litellm_cooldown guard for each group of one deployment (LiteLLM cools
    // deployments whatever the file sets: the default mode needs no key).
    let mut cooldown_fields: Vec<Field> = Vec::new();
    let mut cooldown_keys: Vec<&Entry> = Vec::new();
    if let Some(e) = settings.get("cooldown_time").filter(|e| !from_env(e)) {
        let s = seconds(&src, e)?;
        let note = if s == 0.0 { "; 0 turns the cooldown logic off" } else { "" };
        cooldown_fields.push(field("cooldown_time_ms", toml_number(s * 1000.0), format!("from {}{note}", src.at(e))));
        cooldown_keys.push(e);
    }
    if let Some(e) = settings.get("allowed_fails").filter(|e| !from_env(e)) {
        let n = whole(&src, e, 1_000_000)?;
        cooldown_fields.push(field(
            "allowed_fails",
            n.to_string(),
            format!("from {}; the legacy mode: a counter living cooldown_time from its first failure", src.at(e)),
        ));
        cooldown_keys.push(e);
    }
    let policy: Vec<&Entry> = settings
        .router
        .iter()
        .filter(|e| e.key.starts_with(&format!("{router_prefix}allowed_fails_policy.")))
        .copied()
        .collect();
    let known_policy = [
        "ContentPolicyViolationErrorAllowedFails",
        "BadRequestErrorAllowedFails",
        "AuthenticationErrorAllowedFails",
        "TimeoutErrorAllowedFails",
        "RateLimitErrorAllowedFails",
        "InternalServerErrorAllowedFails",
        "ServiceUnavailableErrorAllowedFails",
        "BadGatewayErrorAllowedFails",
        "NotFoundErrorAllowedFails",
    ];
    let mut policy_items: Vec<String> = Vec::new();
    let mut policy_cited: Vec<String> = Vec::new();
    for e in &policy {
        let name = e.key.rsplit('.').next().unwrap_or("");
        if !known_policy.contains(&name) || from_env(e) || e.value == "null" || e.value.is_empty() {
            continue;
        }
        policy_items.push(format!("{name} = {}", whole(&src, e, 1_000_000)?));
        policy_cited.push(format!("{}:{}", o.name, e.line));
        cooldown_keys.push(e);
    }
    if !policy_items.is_empty() {
        cooldown_fields.push(field(
            "allowed_fails_policy",
            format!("{{ {} }}", policy_items.join(", ")),
            format!(
                "from router_settings.allowed_fails_policy ({}); allowed fails per error class",
                policy_cited.join(", ")
            ),
        ));
    }
    if let Some(e) = settings.get("disable_cooldowns").filter(|e| !from_env(e)) {
        let on = match e.value.trim() {
            "true" | "True" => true,
            "false" | "False" => false,
            v => return Err(src.err(e, format!("expected true or false, found `{v}`"))),
        };
        cooldown_fields.push(field("disable_cooldowns", on.to_string(), format!("from {}", src.at(e))));
        cooldown_keys.push(e);
    }
    let mut cooldown_tables = Vec::new();
    for g in groups.iter().filter(|g| g.deployments.len() == 1) {
        let mut fields = vec![
            field("kind", quote("litellm_cooldown"), "litellm 1.110.2's deployment cooldown for a group of one deployment (cooldown_handlers.py; docs/scenario.md 8.7)".into()),
            field("dependency", quote(&g.dependency), g.why.clone()),
        ];
        fields.extend(cooldown_fields.iter().map(|f| field(&f.key, f.value.clone(), f.comment.clone())));
        if own_fallbacks.contains(&g.name) {
            fields.push(field(
                "group_has_fallbacks",
                "true".into(),
                "the group has fallbacks of its own (default_fallbacks do not count, `_has_fallback_group`): its deployment is not a lone one".into(),
            ));
        }
        if cooldown_fields.is_empty() {
            fields.push(field(
                "cooldown_time_ms",
                "5000".into(),
                "no cooldown setting: the default (percentage) mode, DEFAULT_COOLDOWN_TIME_SECONDS = 5".into(),
            ));
        }
        cooldown_tables.push(Table { header: format!("[[policy.{p}.circuit_breaker]]"), fields });
    }
    frag.tables.extend(cooldown_tables);
    let several: Vec<&str> = groups.iter().filter(|g| g.deployments.len() > 1).map(|g| g.name.as_str()).collect();

    // Everything else the file sets, with why it is not mapped.
    for e in settings.router.iter().chain(&settings.process) {
        let key = e.key.strip_prefix(router_prefix).unwrap_or(&e.key);
        let key = key.strip_prefix("litellm_settings.").unwrap_or(key);
        let top = key.split(['.', '[']).next().unwrap_or(key);
        let why = match top {
            "num_retries" | "retry_after" | "timeout" | "request_timeout" | "fallbacks" | "default_fallbacks" => {
                continue;
            }
            "routing_strategy" | "optional_pre_call_checks" => {
                "the pick among a group's deployments is not modelled (it decides only whether rpm is a limit, above)"
            }
            "allowed_fails" | "cooldown_time" | "allowed_fails_policy" | "disable_cooldowns"
                if cooldown_keys.iter().any(|c| std::ptr::eq(*c, *e)) =>
            {
                if several.is_empty() {
                    continue;
                }
                "mapped onto the litellm_cooldown guard of each group of one deployment only: a group of several is one dependency here, and cooling one of its deployments (a 429 cools it at once, over 50 % of at least 5 requests a minute) moves its traffic to the others, which the model has no mechanism for"
            }
            "allowed_fails" | "cooldown_time" | "allowed_fails_policy" | "disable_cooldowns" => {
                "not an AllowedFailsPolicy field, or read from the environment: not mapped"
            }
            "retry_policy" | "model_group_retry_policy" if mapped_policy.contains(&e.key) => continue,
            "retry_policy" | "model_group_retry_policy" => {
                "a RetryPolicy field with no faultline failure kind of its own (ContentPolicyViolationErrorRetries: a content-policy 400; NotFoundErrorRetries: faultline files 404 with 400 as INVALID_INPUT; DefaultRetries: not measured), or a group's policy that another group's does not use"
            }
            "context_window_fallbacks" => {
                "taken only on a ContextWindowExceededError; faultline's fallbacks follow any failure"
            }
            "content_policy_fallbacks" => {
                "taken only on a ContentPolicyViolationError; faultline's fallbacks follow any failure"
            }
            "max_fallbacks" => "faultline tries every fallback candidate; LiteLLM at most max_fallbacks (default 5)",
            "stream_timeout" => "a streamed call's timeout; the sdk_client has one timeout_ms",
            _ => "not a retry, timeout, fallback or rate-limit setting",
        };
        not_mapped.push(format!("{}: {why}", src.at(e)));
    }
    for g in &groups {
        if g.deployments.len() > 1 {
            not_mapped.push(format!("model group {} has {} deployments (model_list[{}]): the router picks among them and retries on another at once (sleep 0); the group is one dependency here", g.name, g.deployments.len(), g.deployments.iter().map(|(i, _)| i.to_string()).collect::<Vec<_>>().join("], model_list[")));
        }
        for (_, ps) in &g.deployments {
            for e in ps {
                // The deployment's own rpm and model_info's are read above.
                let Some((_, k)) = e.key.rsplit_once("litellm_params.") else { continue };
                let why = match k {
                    "model"
                    | "api_base"
                    | "api_key"
                    | "api_version"
                    | "base_url"
                    | "custom_llm_provider"
                    | "organization"
                    | "timeout"
                    | "rpm"
                    | "num_retries"
                    | "headers"
                    | "extra_headers"
                    | "region_name"
                    | "aws_region_name"
                    | "aws_access_key_id"
                    | "aws_secret_access_key"
                    | "vertex_project"
                    | "vertex_location"
                    | "vertex_credentials" => continue,
                    k if k.starts_with("headers.") || k.starts_with("extra_headers.") => continue,
                    "cooldown_time" => {
                        "a deployment's own cooldown_time (cooldown_handlers.py): the litellm_cooldown guard takes the router's"
                    }
                    "tpm" => "tokens per minute: faultline's rate_limiter counts attempts",
                    "max_retries" => "the provider client's own retries under the router, not measured by the harness",
                    "stream_timeout" => "a streamed call's timeout; the sdk_client has one timeout_ms",
                    "order" | "weight" => "the pick among a group's deployments is not modelled",
                    _ => {
                        "a deployment setting the model does not read (no retry, timeout, fallback, cooldown or limit of faultline's)"
                    }
                };
                not_mapped.push(format!("{}: {why}", src.at(e)));
            }
        }
    }
    frag.not_mapped = not_mapped;
    Ok(frag)
}
