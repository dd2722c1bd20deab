//! Spring Boot's conversions of a property's text into the types resilience4j's properties
//! classes declare: `java.time.Duration` (spring-boot `DurationStyle`: `10s`, `500ms`, a bare
//! number in milliseconds, or ISO-8601 `PT10S`), `Boolean` (`StringToBooleanConverter`: true,
//! on, yes, 1 / false, off, no, 0), integers and floats, and enums (Spring's lenient enum
//! binding: case and `-`/`_` do not matter).

/// A duration in milliseconds (exact for whole nanoseconds up to 2^53 ns).
pub fn duration_ms(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let bad = || format!("`{text}` is not a duration (`10s`, `500ms`, `PT10S`, or a number of milliseconds)");
    if t.starts_with(['p', 'P'])
        || t.starts_with("-P")
        || t.starts_with("+P")
        || t.starts_with("-p")
        || t.starts_with("+p")
    {
        return iso_duration_ms(t).ok_or_else(bad);
    }
    // DurationStyle.SIMPLE: ^([+-]?\d+)([a-zA-Z]{0,2})$
    let digits_end = t
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && (*c == '+' || *c == '-'))))
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(digits_end);
    let n: i64 = num.parse().map_err(|_| bad())?;
    let scale_ms = match unit.to_ascii_lowercase().as_str() {
        "" | "ms" => 1.0,
        "ns" => 1e-6,
        "us" => 1e-3,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3_600e3,
        "d" => 86_400e3,
        _ => return Err(bad()),
    };
    Ok(n as f64 * scale_ms)
}

/// `java.time.Duration.parse`: `PnDTnHnMn.nS`, each part optional, an optional sign in front.
fn iso_duration_ms(t: &str) -> Option<f64> {
    let (sign, rest) = match t.as_bytes()[0] {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let rest = rest.strip_prefix(['P', 'p'])?;
    let (days, time) = match rest.find(['T', 't']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut ms = 0.0;
    let mut any = false;
    if !days.is_empty() {
        ms += days.strip_suffix(['D', 'd'])?.parse::<f64>().ok()? * 86_400e3;
        any = true;
    }
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, scale) in [(['H', 'h'], 3_600e3), (['M', 'm'], 60e3), (['S', 's'], 1e3)] {
            if let Some(i) = time.find(unit) {
                let part = &time[..i];
                if part.is_empty() || (unit[0] != 'S' && part.contains('.')) {
                    return None;
                }
                ms += part.parse::<f64>().ok()? * scale;
                time = &time[i + 1..];
                any = true;
            }
        }
        if !time.is_empty() {
            return None;
        }
    }
    any.then_some(sign * ms)
}

pub fn boolean(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(format!("`{text}` is not a boolean (true or false)")),
    }
}

pub fn integer(text: &str) -> Result<i64, String> {
    text.trim().parse().map_err(|_| format!("`{text}` is not an integer"))
}

pub fn float(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number"))?;
    if v.is_finite() { Ok(v) } else { Err(format!("`{text}` is not a finite number")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spring_durations() {
        assert_eq!(duration_ms("10s"), Ok(10_000.0));
        assert_eq!(duration_ms("500ms"), Ok(500.0));
        assert_eq!(duration_ms("250"), Ok(250.0));
        assert_eq!(duration_ms("PT10S"), Ok(10_000.0));
        assert_eq!(duration_ms("PT0.5S"), Ok(500.0));
        assert_eq!(duration_ms("PT1M30S"), Ok(90_000.0));
        assert_eq!(duration_ms("500ns"), Ok(0.0005));
        assert!(duration_ms("1.5s").is_err(), "SIMPLE takes whole numbers only");
        assert!(duration_ms("10 s").is_err());
        assert!(duration_ms("PT").is_err());
    }

    #[test]
    fn spring_booleans() {
        assert_eq!(boolean("TRUE"), Ok(true));
        assert_eq!(boolean("off"), Ok(false));
        assert!(boolean("maybe").is_err());
    }
}
