//! A proto3 JSON Duration (`"1.5s"`), as the two readers faultline imports from read it: Envoy
//! (protobuf's JSON reader, then whole milliseconds) and grpc-core (`LoadDuration`). One text
//! grammar with the readers' differences named, and each reader's own words when it refuses.

use super::json::{Json, Node};

/// Whose reading of a duration: they differ in the text they take, in what they keep of it, and
/// in how a refusal is worded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// Envoy: no spaces or `+` around the number, `"1.s"` taken; kept in whole milliseconds
    /// (`PROTOBUF_GET_MS_OR_DEFAULT` -> `DurationToMilliseconds` truncates: 0.0009s is 0 ms).
    Envoy,
    /// grpc-core's `LoadDuration` (json_object_loader.cc): ASCII spaces around the number, whole
    /// seconds as `absl::SimpleAtoi` takes them (an optional `+`), then 1 to 9 digits after a
    /// point (`"1.s"` and `".5s"` refused); kept to the nanosecond.
    GrpcCore,
}

/// A duration read: its nanoseconds and its milliseconds as the reader keeps them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duration {
    pub nanos: u128,
    pub ms: f64,
}

/// Reads `node` as `reader` does; a negative duration is refused. The error is the message
/// alone: the caller puts the file, line, column and field before it.
pub fn read(node: &Node, reader: Reader) -> Result<Duration, String> {
    let Json::String(s) = &node.value else {
        return Err(format!("must be a duration string such as \"1.5s\", found {}", node.value.type_name()));
    };
    let bad = |why: &str| match reader {
        Reader::Envoy => format!("{s:?} is not a duration such as \"0.25s\" (Envoy refuses it)"),
        Reader::GrpcCore => format!("{s:?} is not a proto3 JSON duration such as \"1.5s\" ({why})"),
    };
    let body = s.strip_suffix('s').ok_or_else(|| bad("it must end in `s`"))?;
    let body = match reader {
        Reader::Envoy => body,
        Reader::GrpcCore => body.trim_matches(|c: char| c.is_ascii_whitespace()),
    };
    if body.starts_with('-') {
        return Err(match reader {
            Reader::Envoy => format!("{s:?}: Envoy refuses a negative duration"),
            Reader::GrpcCore => format!("{s:?}: a negative duration is refused"),
        });
    }
    let body = match reader {
        Reader::Envoy => body,
        Reader::GrpcCore => body.strip_prefix('+').unwrap_or(body),
    };
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || whole.len() > 12 {
        return Err(bad("whole seconds are 1 to 12 digits"));
    }
    let point_without_digits = frac == Some("");
    let frac = frac.unwrap_or("");
    if (point_without_digits && reader == Reader::GrpcCore) || frac.len() > 9 || !digits(frac) {
        return Err(bad("1 to 9 digits after the point"));
    }
    let nanos = whole.parse::<u128>().map_err(|_| bad("whole seconds"))? * 1_000_000_000
        + format!("{frac:0<9}").parse::<u128>().map_err(|_| bad("fraction"))?;
    let ms = match reader {
        Reader::Envoy => (nanos / 1_000_000) as f64,
        Reader::GrpcCore => nanos as f64 / 1e6,
    };
    Ok(Duration { nanos, ms })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::import::json::parse;

    fn read_text(text: &str, reader: Reader) -> Result<Duration, String> {
        read(&parse(&format!("{text:?}")).unwrap(), reader)
    }

    #[test]
    fn the_readers_differ_in_text_taken_and_milliseconds_kept() {
        let both = |text: &str| (read_text(text, Reader::Envoy), read_text(text, Reader::GrpcCore));
        let (envoy, grpc) = both("1.0009s");
        assert_eq!(envoy.unwrap(), Duration { nanos: 1_000_900_000, ms: 1000.0 });
        assert_eq!(grpc.unwrap(), Duration { nanos: 1_000_900_000, ms: 1000.9 });
        for grpc_only in [" 2s", "2 s", "+2s"] {
            let (envoy, grpc) = both(grpc_only);
            assert_eq!(grpc.unwrap().nanos, 2_000_000_000, "{grpc_only:?}");
            assert_eq!(
                envoy.unwrap_err(),
                format!("{grpc_only:?} is not a duration such as \"0.25s\" (Envoy refuses it)")
            );
        }
        let (envoy, grpc) = both("2.s");
        assert_eq!(envoy.unwrap().nanos, 2_000_000_000);
        assert_eq!(
            grpc.unwrap_err(),
            "\"2.s\" is not a proto3 JSON duration such as \"1.5s\" (1 to 9 digits after the point)"
        );
        let (envoy, grpc) = both("-1s");
        assert_eq!(envoy.unwrap_err(), "\"-1s\": Envoy refuses a negative duration");
        assert_eq!(grpc.unwrap_err(), "\"-1s\": a negative duration is refused");
        for neither in [".5s", "1", "1.0000000001s", "1234567890123s", "1e3s"] {
            let (envoy, grpc) = both(neither);
            assert!(envoy.is_err() && grpc.is_err(), "{neither:?}");
        }
    }
}
