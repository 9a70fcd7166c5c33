"""A budget that survives the process: the append-only file behind a durable accountant.

``dp.Accountant(epsilon=1.0, ledger="budget.ledger")`` keeps its budget and every charge in
this file. A charge is appended and made durable (written in one ``pwrite`` call, then
``fdatasync``) before the spend returns, so before any noise of that release is drawn; every
process that opens the same file shares the budget: a spend takes an exclusive lock on the
file (``flock``), reads the charges appended since its last look (other processes' too) up to
the file's real end, checks the budget, appends, syncs and unlocks. Reopening the file
restores what was spent.

Format (version 2): UTF-8 text, one record per line, each ``<payload>\\t<crc32 of the
payload, 8 hex>``. The first record is the budget, ``budget <epsilon> <delta> <group size>
<composition> <delta'> v2 <ledger id> <mac>``; every other record is a charge, ``charge <n>
<epsilon charged> <delta charged> <total epsilon> <total delta> <previous mac> <mac> <JSON
details>``: charges are numbered from 1, carry the running total after them, and form a hash
chain (each names the MAC of the record before it, the first the budget record's). A *return*
record, ``return <n> <epsilon returned> <delta returned> <total epsilon> <total delta>
<previous mac> <mac> <JSON details>``, is numbered and chained like a charge and lowers the
running total: it gives back the unspent rest of a lease (:meth:`dpfast.Accountant.lease`), a
charge whose details carry ``"lease": <id>``, and its details name that id. The accountant
that reads the ledger checks that a return names a reservation earlier in the same ledger
that is not yet returned and gives back at most what it reserved; anything else is damage. A MAC is
HMAC-SHA-256, cut to 128 bits, of the record (with the ledger id) under a key kept in
``<ledger>.dpfast-key`` (mode 0600). Amounts are exact decimals (``1e-1`` is one tenth;
``inf`` for an unlimited epsilon budget), as the accountant computes them: a charge is what
the spend added to the total, after group scaling and parallel composition. The key file
also holds a *seal*: the number of charges and the MAC of the last one, rewritten after each
durable append (the ledger may run ahead of its seal, after a crash between the two, but
never behind it), so that a last record removed at a record boundary, or a file cut back to
its budget record, is seen.

Failing closed. A ledger that is damaged -- a record that fails its checksum or its MAC, is
cut short, is of an unknown kind or a second budget record, does not continue the chain
(removed, repeated or reordered records), carries a running total that does not add up, or
returns what no lease reserved (a return naming no earlier reservation, a second return of
one lease, a return of more than was reserved); a
file shorter than what was already read from it or than its seal -- counts as exhausted:
:attr:`Accountant.spent` shows the whole budget and every spend raises
:class:`dpfast.accounting.LedgerDamagedError`, naming the line and what is wrong (never the
record's contents), until someone inspects the file and starts a new ledger. A budget record
that fails (a budget raised by hand), an emptied file, or a ledger deleted while its key file
remains is refused at open. A write that fails (a short write, a full disk, a file size
limit, a failed sync) is cut back under the lock and raises :class:`LedgerError`: nothing is
charged.

What the key protects against, and what it cannot. The MACs catch anyone who can write the
ledger but cannot read the key file: edits (a raised budget with its CRC fixed, a lowered
amount), removed, reordered or repeated records and truncation. They cannot stop the owner of
the files, root, or anyone else who can read the key: they can write a fresh, valid ledger.
A ledger is therefore refused when someone else could have planted or changed it -- a ledger
owned by another user or writable by group or world, a key file anyone else can read or
write, a symbolic link, a directory others can write without the sticky bit or owned by
another (non-root) user -- unless it is opened with ``shared_ledger=True``, which trusts every
user who can write these files with the budget.

Ledgers of the first format (``budget <epsilon> <delta> <group size> <composition> <delta'>``
with unnumbered, unchained charges) are refused: start a new ledger for what remains.

Modules: :mod:`~dpfast.ledger.records` (the text of records: encoding, fields, what a sound
record may say), :mod:`~dpfast.ledger.file` (:class:`LedgerFile`: creating, locking, reading,
verifying and appending), :mod:`~dpfast.ledger.trust` (who could have written the files) and
:mod:`~dpfast.ledger.signals` (signals held back during a charge).
"""
from .file import LedgerFile
from .records import (CHARGE, KEY_SUFFIX, MAGIC, RETURN, TOTAL_MISMATCH, UNIT_DIGITS, VERSION,
                      Charge, Damaged, LedgerError, amount_parse, amount_text, budget_record,
                      charge_details, charge_record, decode, encode, read_amounts,
                      read_budget, reserved_twice, unsound_return)
from .signals import HeldSignals, hold_signals, release_signals

__all__ = ["LedgerFile", "LedgerError", "Damaged", "Charge", "encode", "decode",
           # The rest of the format, for dpfast.accounting and the CLI:
           "CHARGE", "KEY_SUFFIX", "MAGIC", "RETURN", "TOTAL_MISMATCH", "UNIT_DIGITS", "VERSION",
           "amount_parse", "amount_text", "budget_record", "charge_details", "charge_record",
           "read_amounts", "read_budget", "reserved_twice", "unsound_return",
           "HeldSignals", "hold_signals", "release_signals"]
