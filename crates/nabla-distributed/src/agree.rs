//! [`check_agreement`]: the start-up check that every rank of a job was set up the same way, so
//! that ranks that disagree on what shapes the collectives (options, model, buffer layout, number
//! of steps) end the job with one error naming the first difference, instead of handing MPI
//! buffers of different sizes or waiting for a collective another rank never starts.

use crate::comm::{Communicator, HostBuffer};
use nabla_core::{Error, Result};

/// The most bytes a record may take: a record names options and shapes, never data.
const MAX_RECORD_BYTES: usize = 1 << 20;

/// Checks that every rank of `comm` holds the same `record`: entries `(name, value)` that must
/// agree across ranks, in the same order on every rank (for example each command-line option
/// that shapes the training, each parameter's shape and dtype).
///
/// Rank 0 broadcasts its record and every rank compares it with its own; if any differ, the
/// lowest rank that differs broadcasts its first difference and every rank returns the same
/// error, naming `what`, that rank, the entry and both values. Every collective this makes has
/// a size that every rank knows before it starts. A world of one returns at once.
///
/// ```
/// use nabla_distributed::{SingleProcess, check_agreement};
/// let record = vec![("--batch-size".to_string(), "64".to_string())];
/// check_agreement(&SingleProcess, "the options", &record)?;
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn check_agreement(
    comm: &dyn Communicator,
    what: &str,
    record: &[(String, String)],
) -> Result<()> {
    if comm.world_size() == 1 {
        return Ok(());
    }
    let mine = encode(record);
    if mine.len() > MAX_RECORD_BYTES {
        return Err(Error::invalid(
            "check_agreement",
            format!(
                "the record of {what} is {} bytes, over the limit",
                mine.len()
            ),
        ));
    }
    let root = broadcast_bytes(comm, &mine)?;
    let difference = first_difference(record, &decode(&root)?);
    let Some(reporter) = lowest_differing_rank(comm, difference.is_some())? else {
        return Ok(());
    };
    let text = match &difference {
        Some((name, theirs, ours)) if comm.rank() == reporter => {
            format!("rank {reporter} has {name} = {ours} where rank 0 has {theirs}")
        }
        _ => String::new(),
    };
    let message =
        String::from_utf8_lossy(&broadcast_from(comm, text.as_bytes(), reporter)?).into_owned();
    Err(Error::invalid(
        "distributed",
        format!("the ranks disagree on {what}: {message}; start every rank with the same settings"),
    ))
}

/// The lowest rank on which `differs` holds, if any: each rank contributes a one-hot vector, so
/// the sum over ranks marks every differing rank.
fn lowest_differing_rank(comm: &dyn Communicator, differs: bool) -> Result<Option<usize>> {
    let mut marks = vec![0u64; comm.world_size()];
    marks[comm.rank()] = u64::from(differs);
    match comm.all_reduce_sum(HostBuffer::U64(marks))?.wait()? {
        HostBuffer::U64(v) if v.len() == comm.world_size() => Ok(v.iter().position(|&m| m > 0)),
        other => Err(unexpected("all_reduce", &other)),
    }
}

/// The first entry of `mine` that differs from `theirs`: its name, `theirs`'s value and ours.
/// An entry missing on one side reads as `(missing)`.
fn first_difference(
    mine: &[(String, String)],
    theirs: &[(String, String)],
) -> Option<(String, String, String)> {
    let missing = || "(missing)".to_string();
    (0..mine.len().max(theirs.len())).find_map(|i| match (mine.get(i), theirs.get(i)) {
        (Some(m), Some(t)) if m == t => None,
        (Some(m), Some(t)) if m.0 == t.0 => Some((m.0.clone(), t.1.clone(), m.1.clone())),
        (Some(m), Some(t)) => Some((m.0.clone(), format!("{} = {}", t.0, t.1), m.1.clone())),
        (Some(m), None) => Some((m.0.clone(), missing(), m.1.clone())),
        (None, Some(t)) => Some((t.0.clone(), t.1.clone(), missing())),
        (None, None) => None,
    })
}

/// Rank 0's `bytes` on every rank.
fn broadcast_bytes(comm: &dyn Communicator, bytes: &[u8]) -> Result<Vec<u8>> {
    broadcast_from(comm, bytes, 0)
}

/// Rank `root`'s `bytes` on every rank: first the length (one value, which every rank expects),
/// then the bytes packed eight to a value.
fn broadcast_from(comm: &dyn Communicator, bytes: &[u8], root: usize) -> Result<Vec<u8>> {
    let len = match comm
        .broadcast(HostBuffer::U64(vec![bytes.len() as u64]), root)?
        .wait()?
    {
        HostBuffer::U64(v) if v.len() == 1 => v[0] as usize,
        other => return Err(unexpected("broadcast", &other)),
    };
    if len > MAX_RECORD_BYTES {
        return Err(Error::invalid(
            "check_agreement",
            format!("rank {root} sent a record of {len} bytes, over the limit"),
        ));
    }
    let mut words = vec![0u64; len.div_ceil(8)];
    if comm.rank() == root {
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut le = [0u8; 8];
            le[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
    }
    match comm.broadcast(HostBuffer::U64(words), root)?.wait()? {
        HostBuffer::U64(v) if v.len() == len.div_ceil(8) => {
            let mut out: Vec<u8> = v.iter().flat_map(|w| w.to_le_bytes()).collect();
            out.truncate(len);
            Ok(out)
        }
        other => Err(unexpected("broadcast", &other)),
    }
}

/// The record as text, one `name<TAB>value` line per entry (tabs and line breaks inside names
/// and values are escaped, so that decoding gives the entries back).
fn encode(record: &[(String, String)]) -> Vec<u8> {
    let escape = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('\t', "\\t")
            .replace('\n', "\\n")
    };
    record
        .iter()
        .map(|(name, value)| format!("{}\t{}\n", escape(name), escape(value)))
        .collect::<String>()
        .into_bytes()
}

/// The entries of a record made by [`encode`].
fn decode(bytes: &[u8]) -> Result<Vec<(String, String)>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::invalid("check_agreement", "rank 0's record is not UTF-8"))?;
    let unescape = |s: &str| {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            out.push(match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('t') => '\t',
                    Some('n') => '\n',
                    Some(other) => other,
                    None => '\\',
                },
                (c, false) => c,
            });
        }
        out
    };
    text.lines()
        .map(|line| {
            let (name, value) = line
                .split_once('\t')
                .ok_or_else(|| Error::invalid("check_agreement", "rank 0's record is malformed"))?;
            Ok((unescape(name), unescape(value)))
        })
        .collect()
}

fn unexpected(op: &'static str, got: &HostBuffer) -> Error {
    Error::invalid(
        op,
        format!("unexpected result of {} {} values", got.len(), got.kind()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn records_survive_encoding() {
        let record = entries(&[("a\tb", "c\nd"), ("back\\slash", ""), ("", "x")]);
        assert_eq!(decode(&encode(&record)).unwrap(), record);
    }

    #[test]
    fn the_first_difference_is_named() {
        let ours = entries(&[("--model", "cnn"), ("--epochs", "3"), ("--seed", "1")]);
        let theirs = entries(&[("--model", "cnn"), ("--epochs", "5"), ("--seed", "2")]);
        let d = first_difference(&ours, &theirs).unwrap();
        assert_eq!(d, ("--epochs".into(), "5".into(), "3".into()));
        assert_eq!(first_difference(&ours, &ours), None);
        let shorter = &ours[..2];
        let d = first_difference(shorter, &ours).unwrap();
        assert_eq!(d, ("--seed".into(), "1".into(), "(missing)".into()));
    }
}
