//! Replaying random draws: a function run again (a checkpointed block in backward, a custom
//! function's body re-run for a derivative) draws exactly the numbers its first run drew (dropout
//! masks included), without advancing any generator, as PyTorch's checkpoint does by restoring the
//! RNG state. Every draw goes through [`next_key`]; [`record`] and [`replay`] scope a run.

use nabla_core::{Error, Generator, Result, RngKey};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// The keys one run drew, each with its number of elements, in order.
pub(crate) type DrawnKeys = Arc<[(RngKey, usize)]>;

enum Frame {
    Record(Vec<(RngKey, usize)>),
    Replay(VecDeque<(RngKey, usize)>),
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Pops the scope's frame even when the run fails or panics.
struct FrameGuard;

impl Drop for FrameGuard {
    fn drop(&mut self) {
        FRAMES.with(|f| f.borrow_mut().pop());
    }
}

/// The key of a draw of `len` elements: the next one of the innermost replay in scope, or else
/// `generator`'s next key. Recording scopes above that replay (or all of them) note the key.
pub(crate) fn next_key(generator: &mut Generator, len: usize) -> Result<RngKey> {
    FRAMES.with(|frames| {
        let mut frames = frames.borrow_mut();
        if frames.is_empty() {
            return Ok(generator.next_key(len));
        }
        let replay = frames.iter().rposition(|f| matches!(f, Frame::Replay(_)));
        let key = match replay.map(|i| &mut frames[i]) {
            Some(Frame::Replay(keys)) => match keys.pop_front() {
                Some((key, n)) if n == len => key,
                Some((_, n)) => {
                    return Err(mismatch(format!("{len} numbers where it drew {n}")));
                }
                None => return Err(mismatch(format!("{len} more numbers than"))),
            },
            Some(Frame::Record(_)) | None => generator.next_key(len),
        };
        let first_recorder = replay.map_or(0, |i| i + 1);
        for frame in &mut frames[first_recorder..] {
            if let Frame::Record(keys) = frame {
                keys.push((key, len));
            }
        }
        Ok(key)
    })
}

fn mismatch(what: String) -> Error {
    Error::invalid(
        "checkpoint",
        format!(
            "a re-run function drew {what} in its first run: its random draws must not depend on \
             anything but its inputs"
        ),
    )
}

/// Runs `f`, returning its result with the keys of the draws it made.
pub(crate) fn record<R>(f: impl FnOnce() -> R) -> (R, DrawnKeys) {
    FRAMES.with(|frames| frames.borrow_mut().push(Frame::Record(Vec::new())));
    let guard = FrameGuard;
    let out = f();
    let keys = FRAMES.with(|frames| match frames.borrow_mut().last_mut() {
        Some(Frame::Record(keys)) => std::mem::take(keys),
        Some(Frame::Replay(_)) | None => Vec::new(),
    });
    drop(guard);
    (out, keys.into())
}

/// Runs `f` with its draws taken from `keys` (those of an earlier run, in order): an error when `f`
/// draws more or fewer numbers than that run did (its randomness then depends on more than its inputs:
/// a module switched between training and evaluation, say). Draws made on other threads `f` spawns
/// are neither recorded nor replayed.
pub(crate) fn replay<R>(keys: &DrawnKeys, f: impl FnOnce() -> Result<R>) -> Result<R> {
    FRAMES.with(|frames| {
        frames
            .borrow_mut()
            .push(Frame::Replay(keys.iter().copied().collect()))
    });
    let guard = FrameGuard;
    let out = f()?;
    let left = FRAMES.with(|frames| match frames.borrow().last() {
        Some(Frame::Replay(rest)) => rest.len(),
        Some(Frame::Record(_)) | None => 0,
    });
    drop(guard);
    if left > 0 {
        return Err(mismatch(format!(
            "{left} fewer batches of random numbers than"
        )));
    }
    Ok(out)
}
