//! Limits on sizes that come from input (shapes, file headers, arguments): an element count that
//! overflows, or a buffer larger than the allocation limit, is an [`Error`] naming the op, the size and
//! the limit, instead of an abort, a panic or a silently empty tensor.
//!
//! The allocation limit defaults to the machine's physical memory (`MemTotal` of `/proc/meminfo`,
//! 64 GiB where that cannot be read); the environment variable `NABLA_MAX_ALLOC_BYTES` or
//! [`set_max_allocation_bytes`] changes it for the process, [`with_allocation_limit`] for a scope on the
//! current thread.
//!
//! `NABLA_MAX_ALLOC_BYTES` is read once, on the first allocation check. It holds a positive whole
//! number of bytes: digits with an optional fraction and exponent (`1000000000`, `1e9`, `1.5e9`),
//! optionally followed by a unit, `B`, `KB`, `MB`, `GB`, `TB` (powers of 1000) or `KiB`, `MiB`,
//! `GiB`, `TiB` (powers of 1024), in any letter case, with optional spaces around the number and
//! before the unit (`512MiB`, `2 GB`). Anything else (empty, negative, zero, a fraction of a byte,
//! more than `usize::MAX` bytes, an unknown unit) makes every allocation check fail with an error
//! naming the variable and its value; [`set_max_allocation_bytes`] and [`with_allocation_limit`]
//! override the variable.
//!
//! ```
//! use nabla_core::{DType, check_allocation, checked_numel};
//! assert_eq!(checked_numel("demo", &[2, 3])?, 6);
//! assert!(checked_numel("demo", &[1 << 32, 1 << 32, 2]).is_err());
//! let err = check_allocation("zeros", &[1 << 40, 1 << 10], DType::F32).unwrap_err();
//! assert!(err.to_string().contains("zeros"));
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::{DType, Error, Result, checked_numel};
use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable that sets the process's allocation limit.
const LIMIT_VAR: &str = "NABLA_MAX_ALLOC_BYTES";

/// The limit set by [`set_max_allocation_bytes`]; 0 while none was set.
static MAX_ALLOCATION: AtomicUsize = AtomicUsize::new(0);

/// The limit from [`LIMIT_VAR`] (or the machine's memory when it is not set), read once; the error
/// says what is wrong with the variable's value.
static ENV_LIMIT: OnceLock<std::result::Result<usize, String>> = OnceLock::new();

const FALLBACK_LIMIT: usize = 64 << 30;

thread_local! {
    /// A scoped limit of the current thread ([`with_allocation_limit`]).
    static SCOPED: Cell<Option<usize>> = const { Cell::new(None) };
}

fn physical_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The limit when nothing sets one: the machine's memory.
fn machine_limit() -> usize {
    physical_memory().unwrap_or(FALLBACK_LIMIT)
}

/// The limit [`LIMIT_VAR`] sets (the machine's memory when it is not set), read once, or why its
/// value is not a size.
fn env_limit() -> &'static std::result::Result<usize, String> {
    ENV_LIMIT.get_or_init(|| limit_from_var(std::env::var_os(LIMIT_VAR).as_deref()))
}

/// The limit a value of [`LIMIT_VAR`] sets (`None`: not set, the machine's memory), or an error
/// message naming the variable and the value.
fn limit_from_var(raw: Option<&std::ffi::OsStr>) -> std::result::Result<usize, String> {
    let Some(raw) = raw else {
        return Ok(machine_limit());
    };
    let Some(text) = raw.to_str() else {
        return Err(format!("{LIMIT_VAR}={raw:?} is not valid UTF-8"));
    };
    parse_byte_size(text).map_err(|why| {
        format!(
            "{LIMIT_VAR}={text:?} {why}: give a positive whole number of bytes, optionally with a \
             unit (1000000000, 1e9, 512MiB, 2GB), or unset it for the default (the machine's memory)"
        )
    })
}

/// The units a byte size may end with (lower case) and their sizes in bytes.
const UNITS: [(&str, u128); 9] = [
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

/// The number of bytes `text` states (the grammar of [`LIMIT_VAR`], in the module documentation), or
/// what is wrong with it, worded to follow the value.
fn parse_byte_size(text: &str) -> std::result::Result<usize, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("is empty".into());
    }
    if text.starts_with('-') {
        return Err("is negative".into());
    }
    let number_end = number_prefix_len(text);
    let (number, unit) = (&text[..number_end], text[number_end..].trim_start());
    let (mantissa, exponent) = parse_decimal(number)?;
    let scale = match unit {
        "" => 1,
        unit => UNITS
            .iter()
            .find(|(name, _)| unit.eq_ignore_ascii_case(name))
            .map(|&(_, size)| size)
            .ok_or_else(|| {
                format!(
                    "has an unknown unit {unit:?} (the units are B, KB, MB, GB, TB for powers of \
                     1000 and KiB, MiB, GiB, TiB for powers of 1024)"
                )
            })?,
    };
    let too_large = || format!("is more than the largest size, {} bytes", usize::MAX);
    let bytes = mantissa.checked_mul(scale).ok_or_else(too_large)?;
    let power = |e: u32| 10u128.checked_pow(e);
    let bytes = if exponent >= 0 {
        power(exponent.unsigned_abs())
            .and_then(|p| bytes.checked_mul(p))
            .ok_or_else(too_large)?
    } else {
        match power(exponent.unsigned_abs()) {
            Some(p) if bytes % p == 0 => bytes / p,
            _ if bytes == 0 => 0,
            _ => return Err("is not a whole number of bytes".into()),
        }
    };
    match usize::try_from(bytes) {
        Ok(0) => Err("is zero; the limit must be at least 1 byte".into()),
        Ok(bytes) => Ok(bytes),
        Err(_) => Err(too_large()),
    }
}

/// The length of the decimal number `text` starts with: digits, `.`, and an exponent (`e` or `E`
/// with an optional sign) when digits follow it.
fn number_prefix_len(text: &str) -> usize {
    let b = text.as_bytes();
    let mut i = b
        .iter()
        .position(|c| !(c.is_ascii_digit() || *c == b'.'))
        .unwrap_or(b.len());
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        let digits = b[i + 1 + sign..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            i += 1 + sign + digits;
        }
    }
    i
}

/// `number` (digits, an optional fraction, an optional exponent) as `mantissa × 10^exponent` with an
/// integer mantissa.
fn parse_decimal(number: &str) -> std::result::Result<(u128, i32), String> {
    let (digits, exponent) = match number.find(['e', 'E']) {
        Some(at) => (&number[..at], &number[at + 1..]),
        None => (number, "0"),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err("is not a number".into());
    }
    let mut mantissa = 0u128;
    for c in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(u128::from(c - b'0')))
            .ok_or_else(|| "has too many digits".to_string())?;
    }
    let exponent: i32 = exponent
        .parse()
        .map_err(|_| "has an exponent out of range".to_string())?;
    let fraction_len =
        i32::try_from(fraction.len()).map_err(|_| "has too many digits".to_string())?;
    Ok((mantissa, exponent.saturating_sub(fraction_len)))
}

/// The current thread's limit: its scoped limit, else the one set for the process, else the one
/// [`LIMIT_VAR`] sets; an error naming `op` and the variable when its value is not a size.
fn allocation_limit(op: &'static str) -> Result<usize> {
    if let Some(limit) = SCOPED.with(Cell::get) {
        return Ok(limit);
    }
    match MAX_ALLOCATION.load(Ordering::Relaxed) {
        0 => env_limit()
            .clone()
            .map_err(|message| Error::invalid(op, message)),
        limit => Ok(limit),
    }
}

/// The largest buffer, in bytes, that an op may allocate for a size taken from its input (the current
/// thread's scoped limit, if any, else the process's). When `NABLA_MAX_ALLOC_BYTES` holds no valid
/// size this is the default (the machine's memory), and every [`check_allocation`] fails with an
/// error naming the variable.
pub fn max_allocation_bytes() -> usize {
    allocation_limit("max_allocation_bytes").unwrap_or_else(|_| machine_limit())
}

/// Sets the allocation limit (bytes, at least 1) for the whole process.
pub fn set_max_allocation_bytes(bytes: usize) {
    MAX_ALLOCATION.store(bytes.max(1), Ordering::Relaxed);
}

/// Runs `f` with the allocation limit of the current thread set to `bytes` (at least 1), restoring the
/// previous limit afterwards (also when `f` panics).
///
/// ```
/// use nabla_core::{max_allocation_bytes, with_allocation_limit};
/// let inside = with_allocation_limit(4096, max_allocation_bytes);
/// assert_eq!(inside, 4096);
/// assert_ne!(max_allocation_bytes(), 4096);
/// ```
pub fn with_allocation_limit<R>(bytes: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(bytes.max(1)))));
    f()
}

/// The words every allocation-limit error contains ([`is_allocation_limit_error`] looks for them).
const OVER_LIMIT: &str = "over the allocation limit";

/// `true` for the error [`check_allocation`] gives: a buffer over the allocation limit (bindings
/// report it as out of memory, as Python's `MemoryError`).
///
/// ```
/// let err = nabla_core::check_allocation("zeros", &[1 << 20, 1 << 20, 1 << 10], nabla_core::DType::F32);
/// assert!(nabla_core::is_allocation_limit_error(&err.unwrap_err()));
/// ```
pub fn is_allocation_limit_error(err: &Error) -> bool {
    matches!(err, Error::InvalidArgument { message, .. } if message.contains(OVER_LIMIT))
}

/// The number of elements of `dims`, or an error naming `op`, the size and the limit when a buffer of
/// that many `dtype` elements would exceed [`max_allocation_bytes`].
pub fn check_allocation(op: &'static str, dims: &[usize], dtype: DType) -> Result<usize> {
    let len = checked_numel(op, dims)?;
    let limit = allocation_limit(op)?;
    match len.checked_mul(dtype.size_in_bytes()) {
        Some(bytes) if bytes <= limit => Ok(len),
        bytes => Err(Error::invalid(
            op,
            format!(
                "shape {dims:?} of {dtype} needs {} bytes, {OVER_LIMIT} of {limit} \
                 bytes (NABLA_MAX_ALLOC_BYTES or nabla_core::set_max_allocation_bytes raises it)",
                bytes.map_or_else(|| "more than usize::MAX".to_string(), |b| b.to_string())
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{LIMIT_VAR, limit_from_var, parse_byte_size};
    use crate::{DType, check_allocation, with_allocation_limit};
    use std::ffi::OsStr;

    /// Run by [`an_invalid_variable_fails_the_first_allocation_check`] in a child process whose
    /// environment holds `NABLA_MAX_ALLOC_BYTES=abc` (the tests of this process run in parallel, so
    /// none of them changes its environment); does nothing elsewhere.
    #[test]
    #[ignore = "run in a child process with NABLA_MAX_ALLOC_BYTES=abc"]
    fn child_with_an_invalid_variable() {
        if std::env::var(LIMIT_VAR).as_deref() != Ok("abc") {
            return;
        }
        let err = check_allocation("zeros", &[4], DType::F32).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("zeros: NABLA_MAX_ALLOC_BYTES=\"abc\" is not a number"),
            "{text}"
        );
        assert!(!crate::is_allocation_limit_error(&err), "{text}");
        // An explicit limit takes precedence over the variable.
        let scoped = with_allocation_limit(64, || check_allocation("zeros", &[4], DType::F32));
        assert_eq!(scoped, Ok(4));
    }

    #[test]
    fn an_invalid_variable_fails_the_first_allocation_check() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "limits::tests::child_with_an_invalid_variable"])
            .args(["--ignored", "--test-threads=1"])
            .env(LIMIT_VAR, "abc")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn byte_sizes_with_exponents_and_units_parse_exactly() {
        let cases: [(&str, usize); 14] = [
            ("1", 1),
            ("1000000000", 1_000_000_000),
            ("1e9", 1_000_000_000),
            ("1E+9", 1_000_000_000),
            ("1.5e9", 1_500_000_000),
            ("2.5KB", 2_500),
            ("5e-1KB", 500),
            ("512MiB", 512 << 20),
            ("512 mib", 512 << 20),
            ("2GB", 2_000_000_000),
            ("1TiB", 1 << 40),
            (" 4096 ", 4096),
            ("\t3B", 3),
            ("18446744073709551615", usize::MAX),
        ];
        for (text, want) in cases {
            assert_eq!(parse_byte_size(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn bad_byte_sizes_say_what_is_wrong() {
        let cases = [
            ("abc", "is not a number"),
            ("", "is empty"),
            ("   ", "is empty"),
            ("-1", "is negative"),
            ("0", "is zero"),
            ("0e9", "is zero"),
            ("0.5", "is not a whole number"),
            ("1e-3", "is not a whole number"),
            ("12345678901234567890123", "is more than the largest size"),
            ("1e20", "is more than the largest size"),
            ("17179869184TiB", "is more than the largest size"),
            ("1e99999999999", "exponent out of range"),
            ("2G", "unknown unit \"G\""),
            ("1 e9", "unknown unit"),
            ("0x10", "unknown unit"),
            ("1.2.3", "is not a number"),
            ("e9", "is not a number"),
            (".", "is not a number"),
            ("+5", "is not a number"),
            ("5\u{0}", "unknown unit"),
        ];
        for (text, why) in cases {
            let err = parse_byte_size(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_variable_error_names_the_variable_and_the_value() {
        let err = limit_from_var(Some(OsStr::new("abc"))).unwrap_err();
        assert!(
            err.starts_with(&format!("{LIMIT_VAR}=\"abc\" is not a number")),
            "{err}"
        );
        assert!(err.contains("512MiB"), "{err}");
        assert_eq!(limit_from_var(Some(OsStr::new("2GB"))), Ok(2_000_000_000));
        assert!(limit_from_var(None).is_ok_and(|limit| limit > 0));
    }
}
