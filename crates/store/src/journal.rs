//! The append-only agent journal `wire.jsonl` (core.md §g.2): open with repair, envelope and
//! migration, durable batched appends that are never silently dropped.
//!
//! Repairs on open, each keeping the bytes it takes out of the journal:
//! * torn final fragment (crash mid-write) → copied to `wire.jsonl.torn-<ms>`, journal truncated
//!   to the end of the last complete record;
//! * a complete final record without `\n` → the newline is added;
//! * corrupt lines in the middle → the whole file is backed up once to `wire.jsonl.bak`, the lines
//!   are reported and skipped, every valid record after them is kept. The lines stay in place so
//!   that line numbers used by undo branch records do not shift. A line that is a torn fragment
//!   with a complete record glued to it (the reference appends onto torn tails) keeps the record.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use kimi_protocol::Record;
use serde_json::Value;

use crate::envelope::{Entry, Reported, read_envelope};
use crate::error::{Result, StoreError};
use crate::fast_replay::fast_replay;
use crate::fsutil::{atomic_write, now_ms, sync_dir, write_side_file};
use crate::lines::{Tail, salvage, scan};
use crate::replay::{OwnedReplayInput, replay_input_owned};

/// When appends reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// `fsync` after every batch: an append returns only once the batch is durable.
    #[default]
    EveryBatch,
    /// Leave flushing to the OS (tests and throwaway sessions only).
    Never,
}

#[derive(Debug, Clone, Default)]
pub struct JournalOptions {
    pub fsync: FsyncPolicy,
}

/// A repair made while opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// A torn final fragment of `bytes` bytes was moved to `side_file`.
    TornTail { bytes: usize, side_file: PathBuf },
    /// The final record lacked its `\n`.
    NewlineAdded,
    /// Lines that are not JSON were skipped; the original file is kept in `backup`.
    CorruptLines { lines: Vec<u64>, backup: PathBuf },
    /// A line holding a torn fragment followed by a complete record (what the reference writes
    /// after a crash): the record was kept, the `dropped_bytes` before it were skipped.
    Salvaged { line: u64, dropped_bytes: usize },
    /// The journal was rewritten (empty, legacy or migrated); the old file is kept in `backup`
    /// when it had content.
    Rewritten {
        from_version: Option<String>,
        backup: Option<PathBuf>,
    },
}

/// What opening read: the records to replay and what was skipped or repaired.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRead {
    /// Metadata first, then every record, with physical line numbers.
    pub entries: Vec<Entry>,
    pub reported: Vec<Reported>,
    pub repairs: Vec<Repair>,
}

/// What [`Journal::open_replay`] read: the replay input and what was skipped or repaired.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRead {
    pub input: OwnedReplayInput,
    pub reported: Vec<Reported>,
    pub repairs: Vec<Repair>,
}

/// Line numbers of a durable append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendAck {
    pub first_line: u64,
    pub last_line: u64,
}

struct Batch {
    bytes: Vec<u8>,
    records: usize,
}

pub struct Journal {
    path: PathBuf,
    file: File,
    // Held for the journal's lifetime: one writer per journal across processes.
    _lock: File,
    options: JournalOptions,
    /// End of the last durable, complete record.
    good_len: u64,
    /// Physical lines up to `good_len`.
    line_count: u64,
    /// Batches not yet durable, oldest first.
    pending: VecDeque<Batch>,
    /// A write failed part-way: bytes past `good_len` may exist and must be cut first.
    dirty: bool,
    /// Protocol version when newer than ours: appends are refused.
    newer_version: Option<String>,
    #[cfg(test)]
    pub(crate) fault: Option<usize>,
}

fn lock_path(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.lock", path.display()))
}

fn side_path(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}.{suffix}", path.display()))
}

fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(StoreError::io("open journal", path))
}

fn encode(values: impl IntoIterator<Item = Value>) -> (Vec<u8>, usize) {
    let mut bytes = Vec::new();
    let mut count = 0;
    for value in values {
        // Serialising a `Value` cannot fail; JSON escapes every newline inside strings.
        bytes.extend(value.to_string().into_bytes());
        bytes.push(b'\n');
        count += 1;
    }
    (bytes, count)
}

/// Cut a torn tail (keeping its bytes in a side file) or terminate a complete last line.
/// Returns the journal's length afterwards.
fn repair_tail(
    file: &mut File,
    path: &Path,
    bytes: &[u8],
    tail: Tail,
    repairs: &mut Vec<Repair>,
) -> Result<u64> {
    match tail {
        Tail::Clean => Ok(bytes.len() as u64),
        Tail::Torn { start } => {
            let side = write_side_file(
                &side_path(path, &format!("torn-{}", now_ms())),
                &bytes[start..],
            )?;
            file.set_len(start as u64)
                .and_then(|()| file.sync_all())
                .map_err(StoreError::io("truncate torn tail of", path))?;
            repairs.push(Repair::TornTail {
                bytes: bytes.len() - start,
                side_file: side,
            });
            Ok(start as u64)
        }
        Tail::Unterminated { .. } => {
            file.seek(SeekFrom::End(0))
                .and_then(|_| file.write_all(b"\n"))
                .and_then(|()| file.sync_all())
                .map_err(StoreError::io("terminate last line of", path))?;
            repairs.push(Repair::NewlineAdded);
            Ok(bytes.len() as u64 + 1)
        }
    }
}

impl Journal {
    /// Whether a process holds the journal at `path` open (its lock file is locked), so that
    /// maintenance (pruning) can leave a session in use alone.
    pub fn is_in_use(path: &Path) -> bool {
        let Ok(lock) = std::fs::OpenOptions::new()
            .write(true)
            .open(lock_path(path))
        else {
            // No lock file: never opened, or its directory is gone; nobody holds it.
            return false;
        };
        matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock))
    }

    /// Open (creating if needed) the journal at `path`, repair it, read and migrate it.
    pub fn open(path: &Path, options: JournalOptions) -> Result<(Journal, JournalRead)> {
        let (lock, file, bytes) = Self::lock_and_read(path)?;
        Self::open_read(path, options, lock, file, bytes)
    }

    /// [`Journal::open`] followed by [`replay_input_owned`] for `agent_id`, refusing a journal
    /// written by a newer protocol ([`StoreError::NewerJournal`]). A journal this version wrote cleanly is decoded straight into typed records (the resume fast path);
    /// anything that needs repair, migration or a report takes the general path.
    pub fn open_replay(
        path: &Path,
        options: JournalOptions,
        agent_id: &str,
    ) -> Result<(Journal, ReplayRead)> {
        let (lock, file, bytes) = Self::lock_and_read(path)?;
        if let Some(fast) = fast_replay(&bytes, agent_id) {
            let journal = Journal {
                path: path.to_path_buf(),
                file,
                _lock: lock,
                options,
                good_len: bytes.len() as u64,
                line_count: fast.line_count,
                pending: VecDeque::new(),
                dirty: false,
                newer_version: None,
                #[cfg(test)]
                fault: None,
            };
            return Ok((
                journal,
                ReplayRead {
                    input: fast.input,
                    reported: Vec::new(),
                    repairs: Vec::new(),
                },
            ));
        }
        let (journal, read) = Self::open_read(path, options, lock, file, bytes)?;
        // Replaying a newer journal would drop the records this build does not know (a new
        // prompt, a finished tool call) and run the turn again without them: refuse instead.
        if let Some(version) = journal.newer_version.clone() {
            return Err(StoreError::NewerJournal {
                path: path.to_path_buf(),
                version,
            });
        }
        let input =
            replay_input_owned(read.entries, agent_id).map_err(|e| StoreError::BadTree {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        Ok((
            journal,
            ReplayRead {
                input,
                reported: read.reported,
                repairs: read.repairs,
            },
        ))
    }

    /// Re-read the journal from disk (pending records excluded) for `agent_id`'s replay, as
    /// [`Journal::open_replay`] does.
    pub fn read_replay(&mut self, agent_id: &str) -> Result<OwnedReplayInput> {
        let bytes = self.read_durable()?;
        if let Some(fast) = fast_replay(&bytes, agent_id) {
            return Ok(fast.input);
        }
        replay_input_owned(entries_of(&bytes), agent_id).map_err(|e| StoreError::BadTree {
            path: self.path.clone(),
            reason: e.to_string(),
        })
    }

    /// Take the writer lock, then read the whole file.
    fn lock_and_read(path: &Path) -> Result<(File, File, Vec<u8>)> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let created_dir = !dir.exists();
        std::fs::create_dir_all(dir).map_err(StoreError::io("create directory", dir))?;
        if created_dir {
            sync_dir(dir)?;
        }
        let lock = open_rw(&lock_path(path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StoreError::Io {
                    action: "lock",
                    path: lock_path(path),
                    source,
                });
            }
        }
        let mut file = open_rw(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(StoreError::io("read journal", path))?;
        Ok((lock, file, bytes))
    }

    /// The general path of [`Journal::open`] on the bytes read under the lock.
    fn open_read(
        path: &Path,
        options: JournalOptions,
        lock: File,
        mut file: File,
        bytes: Vec<u8>,
    ) -> Result<(Journal, JournalRead)> {
        let mut repairs = Vec::new();
        let mut scanned = scan(&bytes);
        let mut damaged = Vec::new();
        for line in &mut scanned.lines {
            if line.parsed.is_err() {
                damaged.push(line.number);
                if let Some((offset, value)) = salvage(&bytes[line.start..line.end]) {
                    line.parsed = Ok(value);
                    repairs.push(Repair::Salvaged {
                        line: line.number,
                        dropped_bytes: offset,
                    });
                }
            }
        }
        let corrupt: Vec<u64> = scanned.corrupt().map(|l| l.number).collect();
        let tail = scanned.tail;
        let lines: Vec<Entry> = scanned
            .lines
            .into_iter()
            .filter_map(|l| {
                l.parsed.ok().map(|value| Entry {
                    line: l.number,
                    value,
                })
            })
            .collect();
        // Decide on the envelope before touching the file: a journal we cannot read, or one
        // written by a newer version, is left exactly as it is.
        let envelope =
            read_envelope(lines, &corrupt, now_ms()).map_err(|source| StoreError::Wire {
                path: path.to_path_buf(),
                source,
            })?;
        let newer_version = envelope
            .is_newer()
            .then(|| envelope.stored_version.clone())
            .flatten();
        if newer_version.is_some() {
            repairs.clear();
        }

        let mut len = bytes.len() as u64;
        if newer_version.is_none() {
            if !damaged.is_empty() {
                let backup = side_path(path, "bak");
                // The first backup holds the oldest evidence; later opens keep it.
                if !backup.exists() {
                    atomic_write(&backup, &bytes)?;
                }
                if !corrupt.is_empty() {
                    repairs.push(Repair::CorruptLines {
                        lines: corrupt,
                        backup,
                    });
                }
            }
            len = repair_tail(&mut file, path, &bytes, tail, &mut repairs)?;
        }
        let line_count = bytes[..len.min(bytes.len() as u64) as usize]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64
            + u64::from(len > bytes.len() as u64);

        let mut journal = Journal {
            path: path.to_path_buf(),
            file,
            _lock: lock,
            options,
            good_len: len,
            line_count,
            pending: VecDeque::new(),
            dirty: false,
            newer_version,
            #[cfg(test)]
            fault: None,
        };
        if let Some(content) = envelope.rewrite {
            let backup = if len > 0 {
                let name = format!(
                    "pre-{}.bak",
                    envelope.stored_version.as_deref().unwrap_or("legacy")
                );
                Some(write_side_file(&side_path(path, &name), &bytes)?)
            } else {
                None
            };
            journal.rewrite(content)?;
            repairs.push(Repair::Rewritten {
                from_version: envelope.stored_version.clone(),
                backup,
            });
        }
        for warning in crate::report::repair_warnings(path, &repairs) {
            tracing::warn!("{warning}");
        }
        Ok((
            journal,
            JournalRead {
                entries: envelope.yielded,
                reported: envelope.reported,
                repairs,
            },
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Physical lines in the journal (the metadata line is line 1).
    pub fn line_count(&self) -> u64 {
        self.line_count
    }

    /// Records accepted by `append` but not yet durable (after a failed append).
    pub fn pending_records(&self) -> usize {
        self.pending.iter().map(|b| b.records).sum()
    }

    /// Replace the whole journal atomically (used by migration; never by ordinary writes).
    fn rewrite(&mut self, values: Vec<Value>) -> Result<()> {
        let (bytes, count) = encode(values);
        atomic_write(&self.path, &bytes)?;
        self.file = open_rw(&self.path)?;
        self.good_len = bytes.len() as u64;
        self.line_count = count as u64;
        self.dirty = false;
        Ok(())
    }

    /// Append typed records as one durable batch.
    pub fn append(&mut self, records: &[Record]) -> Result<AppendAck> {
        self.append_values(records.iter().map(Record::to_value).collect())
    }

    /// Append raw JSON records as one durable batch. On failure the batch stays pending and the
    /// error says so; the next append (or `retry_pending`) writes it first, in order.
    pub fn append_values(&mut self, values: Vec<Value>) -> Result<AppendAck> {
        if let Some(version) = &self.newer_version {
            return Err(StoreError::NewerJournal {
                path: self.path.clone(),
                version: version.clone(),
            });
        }
        let (bytes, records) = encode(values);
        if records > 0 {
            self.pending.push_back(Batch { bytes, records });
        }
        self.flush_pending()
    }

    /// Write whatever is pending. Returns the lines written (empty range when nothing was).
    pub fn retry_pending(&mut self) -> Result<AppendAck> {
        self.flush_pending()
    }

    fn flush_pending(&mut self) -> Result<AppendAck> {
        let first_line = self.line_count + 1;
        if self.pending.is_empty() {
            return Ok(AppendAck {
                first_line,
                last_line: self.line_count,
            });
        }
        let records = self.pending_records();
        let mut bytes = Vec::with_capacity(self.pending.iter().map(|b| b.bytes.len()).sum());
        for batch in &self.pending {
            bytes.extend_from_slice(&batch.bytes);
        }
        if let Err(source) = self.write_at_good_len(&bytes) {
            // Part of the batch may be on disk: cut it before the next attempt so the journal
            // always continues on a clean line boundary.
            self.dirty = true;
            return Err(StoreError::AppendFailed {
                path: self.path.clone(),
                records,
                source,
            });
        }
        self.good_len += bytes.len() as u64;
        self.line_count += records as u64;
        self.pending.clear();
        Ok(AppendAck {
            first_line,
            last_line: self.line_count,
        })
    }

    fn write_at_good_len(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.dirty {
            self.file.set_len(self.good_len)?;
            self.file.sync_all()?;
            self.dirty = false;
        }
        self.file.seek(SeekFrom::Start(self.good_len))?;
        #[cfg(test)]
        if let Some(partial) = self.fault.take() {
            self.file.write_all(&bytes[..partial.min(bytes.len())])?;
            return Err(std::io::Error::other("injected write failure"));
        }
        self.file.write_all(bytes)?;
        match self.options.fsync {
            FsyncPolicy::EveryBatch => self.file.sync_data(),
            FsyncPolicy::Never => Ok(()),
        }
    }

    /// Re-read the journal from disk (pending records excluded): every parsed line with its number.
    pub fn read_entries(&mut self) -> Result<Vec<Entry>> {
        Ok(entries_of(&self.read_durable()?))
    }

    /// The durable bytes of the journal.
    fn read_durable(&mut self) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| (&self.file).take(self.good_len).read_to_end(&mut bytes))
            .map_err(StoreError::io("read journal", &self.path))?;
        Ok(bytes)
    }
}

/// Every line of `bytes` that parses, with its number.
fn entries_of(bytes: &[u8]) -> Vec<Entry> {
    scan(bytes)
        .lines
        .into_iter()
        .filter_map(|l| {
            l.parsed.ok().map(|value| Entry {
                line: l.number,
                value,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
