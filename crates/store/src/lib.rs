//! Session layout on disk, append-only journal with torn-line repair, migrations, replay, undo branches, session index.
