//! The opt-in fatal-signal reporter, and the map of plugin code it reads.
//!
//! [`install_crash_reporter`] installs a handler for `SIGSEGV`, `SIGBUS`,
//! `SIGILL` and `SIGFPE`. From then on every plugin whose code is mapped
//! (an embedded ELF image, or a shared library the OS loader opened; both
//! announced through [`code_mapped`](crate::code_mapped)) is added to a fixed table of code ranges
//! and function names, prepared when it loads; a process without the
//! reporter prepares nothing. When one of those signals arrives, the
//! handler looks the faulting instruction up in that table, writes one
//! line to stderr ("`xplug: SIGSEGV at crashy_resolve+0x1c in
//! libcrash.so ...`"), and, when a report file descriptor was given (the
//! probe's stage file), the same facts as one machine-readable line that
//! [`FaultReport::parse`] reads back. Then it puts the previous action
//! back and lets the signal take its course, so the process dies as it
//! would have.
//!
//! In the handler only async-signal-safe operations run: atomic loads,
//! reads of memory published before the signal, `write(2)`,
//! `process_vm_readv(2)` (to read the stack without faulting),
//! `sigaction(2)` and `raise(3)`. Nothing allocates or locks.
//!
//! When the instruction lies outside every plugin (in libc's `memcpy`,
//! say), the module holding it is named from a snapshot of the loaded
//! objects taken outside the handler, and the stack above the faulting
//! frame is scanned (at most [`STACK_SCAN_BYTES`]) for a return address
//! inside a plugin function: "called from the plugin's X+0x..".

use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};

use xplug_elf::{ImageFunction, image_functions};

use crate::DebugError;

/// Plugin modules the table holds at once; a plugin loaded while it is
/// full is not named in reports.
pub const MAX_MODULES: usize = 256;

/// How many bytes above the stack pointer the handler scans for a return
/// address into a plugin, when the fault lies outside every plugin.
pub const STACK_SCAN_BYTES: usize = 32 * 1024;

/// Bytes of a module name kept (longer file names are cut).
const MAX_MODULE_NAME: usize = 255;

/// One range of code with its functions, immutable once published.
struct Module {
    /// `[start, end)`: the addresses of the module's executable segments.
    start: usize,
    end: usize,
    /// Where the module's address 0 is (its load bias): an address without
    /// a function is reported as an offset from here, the address
    /// `objdump -d` shows for it.
    base: usize,
    /// Whether this is a plugin (a stack scan looks for these only).
    plugin: bool,
    /// The module's file name, without tabs or newlines.
    name: Box<[u8]>,
    /// Sorted by `start`, non-overlapping.
    functions: Box<[Function]>,
    /// The functions' names, one after another.
    names: Box<[u8]>,
}

struct Function {
    start: usize,
    size: usize,
    name: (usize, usize),
}

impl Module {
    fn new(
        name: &str,
        plugin: bool,
        range: (usize, usize),
        base: usize,
        functions: &[ImageFunction],
    ) -> Self {
        let mut names = Vec::new();
        let mut table = Vec::with_capacity(functions.len());
        for function in functions {
            let (Ok(offset), Ok(size)) = (usize::try_from(function.offset), usize::try_from(function.size))
            else {
                continue;
            };
            let Some(start) = base.checked_add(offset) else { continue };
            let begin = names.len();
            names.extend(function.name.bytes().map(clean));
            table.push(Function { start, size, name: (begin, names.len()) });
        }
        Self {
            start: range.0,
            end: range.1,
            base,
            plugin,
            name: name.bytes().take(MAX_MODULE_NAME).map(clean).collect(),
            functions: table.into_boxed_slice(),
            names: names.into_boxed_slice(),
        }
    }

    fn contains(&self, address: usize) -> bool {
        (self.start..self.end).contains(&address)
    }

    /// The function holding `address` and the offset into it.
    fn function_at(&self, address: usize) -> Option<(&[u8], usize)> {
        let after = self.functions.partition_point(|function| function.start <= address);
        let function = self.functions.get(after.checked_sub(1)?)?;
        let into = address - function.start;
        (into < function.size)
            .then(|| (self.names.get(function.name.0..function.name.1).unwrap_or(b"?"), into))
    }
}

/// Tabs and line ends would break the report's fields.
fn clean(byte: u8) -> u8 {
    if byte == b'\t' || byte == b'\n' || byte == b'\r' { b'?' } else { byte }
}

/// The published modules: plugins, and (slot `MAX_MODULES`) nothing.
static PLUGINS: [AtomicPtr<Module>; MAX_MODULES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_MODULES];
/// The other loaded objects (the executable, libc...), as one snapshot.
static OTHERS: AtomicPtr<Vec<Module>> = AtomicPtr::new(std::ptr::null_mut());
/// Handlers that have started reading the table. Never decremented: a
/// handler ends the process. Memory unpublished while it is non-zero is
/// leaked instead of freed.
static READERS: AtomicUsize = AtomicUsize::new(0);
/// Serialises the writers of the table.
static WRITERS: Mutex<()> = Mutex::new(());
/// Whether the reporter is installed (loads then prepare their entries).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Where the machine-readable line goes (-1: nowhere).
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// Whether [`install_crash_reporter`] has run in this process.
#[must_use]
pub fn crash_reporter_installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// A plugin's entry in the crash reporter's table, removed on drop (before
/// the plugin's code is unmapped).
#[derive(Debug)]
pub(crate) struct CodeRegistration {
    slot: usize,
}

impl Drop for CodeRegistration {
    fn drop(&mut self) {
        let _writers = WRITERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let module = PLUGINS[self.slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
        release(module);
    }
}

/// Frees `module` (from `Box::into_raw`, now unpublished) unless a handler
/// may be reading it.
fn release<T>(module: *mut T) {
    if !module.is_null() && READERS.load(Ordering::SeqCst) == 0 {
        // SAFETY: `module` came from `Box::into_raw` and was unpublished by
        // a SeqCst swap before `READERS` was read as 0: a handler bumps
        // `READERS` (SeqCst) before loading any pointer, so none can hold
        // it. Each pointer is released once, by whoever swapped it out.
        drop(unsafe { Box::from_raw(module) });
    }
}

/// Adds a plugin's code to the crash reporter's table: its executable
/// range `[start, end)` and its functions, at offsets from `base`. `None`
/// (nothing to do) when the reporter is not installed or the table is
/// full. The entry is removed when the result drops.
#[must_use]
pub(crate) fn register_code(
    name: &str,
    range: (usize, usize),
    base: usize,
    functions: &[ImageFunction],
) -> Option<CodeRegistration> {
    if !crash_reporter_installed() {
        return None;
    }
    let module = Box::into_raw(Box::new(Module::new(name, true, range, base, functions)));
    let _writers = WRITERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (slot, entry) in PLUGINS.iter().enumerate() {
        if entry.compare_exchange(std::ptr::null_mut(), module, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return Some(CodeRegistration { slot });
        }
    }
    // SAFETY: never published: this is still the only pointer to it.
    drop(unsafe { Box::from_raw(module) });
    None
}

/// Adds the shared library holding `address` (any address of its code,
/// such as its query function) to the crash reporter's table, with the
/// functions of its file's `.symtab` (or `.dynsym`), and refreshes the
/// snapshot of the other loaded objects. `None` when the reporter is not
/// installed, no loaded object holds `address`, or the table is full.
/// Reports call it `name`, or its file's name when `None`.
#[must_use]
pub(crate) fn register_loaded_library(address: usize, name: Option<&str>) -> Option<CodeRegistration> {
    if !crash_reporter_installed() {
        return None;
    }
    let objects = loaded::objects();
    let object = objects.iter().find(|object| object.contains(address))?;
    let functions = std::fs::read(&object.path).map(|file| image_functions(&file, 0)).unwrap_or_default();
    let registration =
        register_code(name.unwrap_or(&object.name), (object.start, object.end), object.base, &functions);
    refresh_others(objects);
    registration
}

/// Replaces the snapshot of the loaded objects.
fn refresh_others(objects: Vec<loaded::Object>) {
    let others: Vec<Module> = objects
        .iter()
        .map(|object| Module::new(&object.name, false, (object.start, object.end), object.base, &[]))
        .collect();
    let _writers = WRITERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let old = OTHERS.swap(Box::into_raw(Box::new(others)), Ordering::SeqCst);
    release(old);
}

/// Installs the fatal-signal reporter for `SIGSEGV`, `SIGBUS`, `SIGILL`
/// and `SIGFPE` (the module's documentation says what it does). Plugins
/// loaded from then on are named in its reports: install it before
/// loading any. Calling it again only changes `report_fd` (when `Some`).
///
/// `report_fd`, when given, receives one machine-readable line per fault
/// ([`FaultReport::parse`]); it must stay open for the process's life.
///
/// ```no_run
/// xplug_debug::install_crash_reporter(None)?;
/// // ... load plugins; a crash inside one now prints
/// // "xplug: SIGSEGV at crashy_kernel+0x4 in crash.sos (...)" to stderr.
/// # Ok::<(), xplug_debug::DebugError>(())
/// ```
///
/// # Errors
/// [`DebugError::UnsupportedHost`] off Linux (x86_64 and aarch64), or when
/// `sigaction` refuses.
pub fn install_crash_reporter(report_fd: Option<std::os::fd::RawFd>) -> Result<(), DebugError> {
    if let Some(fd) = report_fd {
        REPORT_FD.store(fd, Ordering::SeqCst);
    }
    let writers = WRITERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    handler::install()?;
    INSTALLED.store(true, Ordering::Release);
    drop(writers);
    refresh_others(loaded::objects());
    Ok(())
}

/// Where a fault's instruction (or a frame's return address) lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeLocation {
    /// The file name of the plugin or library holding it.
    pub module: String,
    /// The function holding it, when the module's symbols name one.
    pub symbol: Option<String>,
    /// Bytes into `symbol`; when there is none, from the module's load
    /// base (the address `objdump -d` shows for the instruction).
    pub offset: u64,
    /// Whether `module` is a plugin.
    pub plugin: bool,
}

impl fmt::Display for CodeLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.symbol {
            Some(symbol) => write!(f, "{symbol}+{:#x} in {}", self.offset, self.module),
            None => write!(f, "{}+{:#x}", self.module, self.offset),
        }
    }
}

/// What the reporter learnt about one fatal signal, as read back from its
/// machine-readable line ([`FaultReport::parse`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultReport {
    /// The signal number.
    pub signal: i32,
    /// The faulting instruction's address (the program counter).
    pub address: u64,
    /// The data address the kernel reported (`si_addr`) for `SIGSEGV` and
    /// `SIGBUS`.
    pub data_address: Option<u64>,
    /// Where `address` lies, when a known module holds it.
    pub at: Option<CodeLocation>,
    /// When `at` is not a plugin: the plugin function found on the stack
    /// that called into it.
    pub called_from: Option<CodeLocation>,
}

/// The first word of the machine-readable line.
const LINE_TAG: &str = "xplug-fault";

impl FaultReport {
    /// Reads the last machine-readable fault line in `text` (other lines
    /// are skipped); `None` when there is none or it is malformed.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        text.lines().rev().find_map(Self::parse_line)
    }

    fn parse_line(line: &str) -> Option<Self> {
        let mut fields = line.split('\t');
        if fields.next()? != LINE_TAG {
            return None;
        }
        let mut field = std::collections::HashMap::new();
        for entry in fields {
            let (key, value) = entry.split_once('=')?;
            field.insert(key, value);
        }
        let hex = |key: &str| field.get(key).and_then(|value| u64::from_str_radix(value, 16).ok());
        let location = |prefix: &str| -> Option<CodeLocation> {
            let module = field.get(format!("{prefix}_module").as_str())?;
            Some(CodeLocation {
                module: (*module).to_owned(),
                symbol: field.get(format!("{prefix}_symbol").as_str()).map(|s| (*s).to_owned()),
                offset: hex(&format!("{prefix}_offset"))?,
                plugin: field.get(format!("{prefix}_plugin").as_str()) == Some(&"1"),
            })
        };
        Some(Self {
            signal: field.get("signal")?.parse().ok()?,
            address: hex("pc")?,
            data_address: hex("addr"),
            at: location("at"),
            called_from: location("from"),
        })
    }
}

/// "at crashy_resolve+0x1c in libcrash.so", "in libc.so.6+0x9a2b1,
/// called from the plugin's f+0x10 in p.so", "at 0x1234".
impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) if at.symbol.is_some() => write!(f, "at {at}")?,
            Some(at) => write!(f, "in {at}")?,
            None => write!(f, "at {:#x}", self.address)?,
        }
        if let Some(from) = &self.called_from {
            write!(f, ", called from the plugin's {from}")?;
        }
        Ok(())
    }
}

/// A fixed buffer the handler formats its lines in.
struct Line {
    bytes: [u8; 1024],
    len: usize,
}

impl Line {
    const fn new() -> Self {
        Self { bytes: [0; 1024], len: 0 }
    }

    fn push(&mut self, bytes: &[u8]) -> &mut Self {
        let room = self.bytes.len() - self.len;
        let take = bytes.len().min(room);
        self.bytes[self.len..self.len + take].copy_from_slice(&bytes[..take]);
        self.len += take;
        self
    }

    fn hex(&mut self, value: usize) -> &mut Self {
        let mut digits = [0u8; 16];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            digits[at] = b"0123456789abcdef"[rest & 0xf];
            rest >>= 4;
            if rest == 0 {
                break;
            }
        }
        self.push(&digits[at..])
    }

    fn dec(&mut self, value: usize) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.push(&digits[at..])
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A location found by the handler, borrowing the table.
struct Found<'table> {
    module: &'table Module,
    symbol: Option<&'table [u8]>,
    offset: usize,
}

/// Looks `address` up: plugins first, then the snapshot of the others.
/// Only called from the handler, after `READERS` was bumped.
fn locate(address: usize) -> Option<Found<'static>> {
    let found = |module: &'static Module| {
        let (symbol, offset) = match module.function_at(address) {
            Some((symbol, offset)) => (Some(symbol), offset),
            None => (None, address.wrapping_sub(module.base)),
        };
        Found { module, symbol, offset }
    };
    for entry in &PLUGINS {
        let module = entry.load(Ordering::SeqCst);
        // SAFETY: a published pointer stays valid while `READERS` is
        // non-zero (`release` leaks instead of freeing), which the caller
        // made so; the module is immutable once published.
        if let Some(module) = unsafe { module.as_ref() }
            && module.contains(address)
        {
            return Some(found(module));
        }
    }
    let others = OTHERS.load(Ordering::SeqCst);
    // SAFETY: as above, for the snapshot.
    let others = unsafe { others.as_ref() }?;
    others.iter().find(|module| module.contains(address)).map(found)
}

/// A plugin function holding `address` past its first byte (a return
/// address), for the stack scan.
fn plugin_return_address(address: usize) -> Option<Found<'static>> {
    let found = locate(address)?;
    (found.module.plugin && found.symbol.is_some() && found.offset > 0).then_some(found)
}

/// Writes the facts of one fault: the human line to stderr, the machine
/// line to the report descriptor.
fn report(signal: c_int, pc: usize, data: Option<usize>, at: Option<&Found<'_>>, from: Option<&Found<'_>>) {
    let mut human = Line::new();
    human.push(b"xplug: ").push(signal_name(signal).as_bytes());
    match at {
        Some(found) if found.symbol.is_some() => {
            human.push(b" at ");
            push_location(&mut human, found);
        }
        Some(found) => {
            human.push(b" in ");
            push_location(&mut human, found);
        }
        None => {
            human.push(b" at 0x").hex(pc);
        }
    }
    if let Some(from) = from {
        human.push(b", called from the plugin's ");
        push_location(&mut human, from);
    }
    human.push(b" (pc 0x").hex(pc);
    if let Some(data) = data {
        human.push(b", fault address 0x").hex(data);
    }
    human.push(b")\n");
    write_all(libc::STDERR_FILENO, human.as_bytes());

    let fd = REPORT_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    let mut machine = Line::new();
    machine.push(LINE_TAG.as_bytes()).push(b"\tsignal=").dec(signal as usize).push(b"\tpc=").hex(pc);
    if let Some(data) = data {
        machine.push(b"\taddr=").hex(data);
    }
    for (prefix, location) in [(&b"at"[..], at), (&b"from"[..], from)] {
        let Some(found) = location else { continue };
        machine.push(b"\t").push(prefix).push(b"_module=").push(&found.module.name);
        if let Some(symbol) = found.symbol {
            machine.push(b"\t").push(prefix).push(b"_symbol=").push(symbol);
        }
        machine.push(b"\t").push(prefix).push(b"_offset=").hex(found.offset);
        machine.push(b"\t").push(prefix).push(b"_plugin=").push(if found.module.plugin {
            b"1"
        } else {
            b"0"
        });
    }
    machine.push(b"\n");
    write_all(fd, machine.as_bytes());
}

/// `symbol+0xOFF in module`, or `module+0xOFF`.
fn push_location(line: &mut Line, found: &Found<'_>) {
    match found.symbol {
        Some(symbol) => {
            line.push(symbol).push(b"+0x").hex(found.offset).push(b" in ").push(&found.module.name);
        }
        None => {
            line.push(&found.module.name).push(b"+0x").hex(found.offset);
        }
    }
}

fn signal_name(signal: c_int) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => "fatal signal",
    }
}

/// `write(2)` until done or failed (async-signal-safe).
fn write_all(fd: c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice; `write` only reads it.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast::<c_void>(), bytes.len()) };
        match usize::try_from(written) {
            Ok(0) | Err(_) => return,
            Ok(count) => bytes = &bytes[count.min(bytes.len())..],
        }
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod handler {
    //! The signal handler itself (Linux on x86_64 and aarch64: where the
    //! program counter is read from the `ucontext_t`).

    use std::ffi::{c_int, c_void};
    use std::sync::atomic::Ordering;

    use super::{READERS, STACK_SCAN_BYTES, locate, plugin_return_address, report};
    use crate::DebugError;

    /// The signals reported.
    const SIGNALS: [c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE];

    /// The actions in place before [`install`], put back by the handler.
    /// Written once, under the writers' lock, before the handler is set.
    static mut PREVIOUS: [std::mem::MaybeUninit<libc::sigaction>; 4] =
        [const { std::mem::MaybeUninit::uninit() }; 4];

    pub(super) fn install() -> Result<(), DebugError> {
        for (index, &signal) in SIGNALS.iter().enumerate() {
            // SAFETY: zeroed `sigaction` is a valid value to fill in; the
            // handler has the `SA_SIGINFO` signature; `PREVIOUS[index]` is
            // written here, under the writers' lock, before the handler can
            // run for this signal (it is set by this very call), and never
            // again.
            let installed = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fatal_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let previous = (&raw mut PREVIOUS[index]).cast::<libc::sigaction>();
                libc::sigaction(signal, &action, previous)
            };
            if installed != 0 {
                return Err(DebugError::UnsupportedHost { reason: "sigaction refused the crash reporter" });
            }
        }
        Ok(())
    }

    /// The program counter and stack pointer at the fault.
    ///
    /// # Safety
    /// `context` is the `ucontext_t` the kernel passed to an `SA_SIGINFO`
    /// handler.
    unsafe fn registers(context: *mut c_void) -> (usize, usize) {
        let context = context.cast::<libc::ucontext_t>();
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the caller's promise; the registers are plain data.
            let gregs = unsafe { &(*context).uc_mcontext.gregs };
            (gregs[libc::REG_RIP as usize] as usize, gregs[libc::REG_RSP as usize] as usize)
        }
        #[cfg(target_arch = "aarch64")]
        {
            // SAFETY: the caller's promise; the registers are plain data.
            let mcontext = unsafe { &(*context).uc_mcontext };
            (mcontext.pc as usize, mcontext.sp as usize)
        }
    }

    /// Scans the words above `sp` for a return address into a plugin. Each
    /// chunk is copied with `process_vm_readv` on this very process, which
    /// fails (instead of faulting) past the end of the stack.
    fn scan_stack(sp: usize) -> Option<super::Found<'static>> {
        const WORDS: usize = 64;
        let word = std::mem::size_of::<usize>();
        let mut chunk = [0usize; WORDS];
        let mut at = sp & !(word - 1);
        let end = at.saturating_add(STACK_SCAN_BYTES);
        // SAFETY: `getpid` has no preconditions.
        let pid = unsafe { libc::getpid() };
        while at < end {
            let local = libc::iovec { iov_base: chunk.as_mut_ptr().cast(), iov_len: WORDS * word };
            let remote = libc::iovec { iov_base: at as *mut c_void, iov_len: WORDS * word };
            // SAFETY: `local` is our own buffer of `iov_len` bytes; the
            // kernel checks `remote` and fails with EFAULT past a mapping.
            let read = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
            let Ok(read) = usize::try_from(read) else { return None };
            if read == 0 {
                return None;
            }
            for &value in &chunk[..read / word] {
                if let Some(found) = plugin_return_address(value) {
                    return Some(found);
                }
            }
            at += read;
        }
        None
    }

    /// The handler: report, put the previous action back, and let the
    /// signal take its course. No unwinding can leave it: everything it
    /// calls is panic-free (slice bounds are checked by construction).
    extern "C" fn on_fatal_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        READERS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the kernel passes the `ucontext_t` of the interrupted
        // thread to an `SA_SIGINFO` handler.
        let (pc, sp) = unsafe { registers(context) };
        // SAFETY: `info` is the kernel's `siginfo_t` for this signal.
        let (code, data) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        let data = matches!(signal, libc::SIGSEGV | libc::SIGBUS).then_some(data);
        let at = locate(pc);
        let from = match &at {
            Some(found) if found.module.plugin => None,
            _ => scan_stack(sp),
        };
        report(signal, pc, data, at.as_ref(), from.as_ref());
        let index = SIGNALS.iter().position(|&known| known == signal).unwrap_or(0);
        // SAFETY: `PREVIOUS[index]` was written by `install` before this
        // handler was set for `signal`; `sigaction` and `raise` are
        // async-signal-safe.
        unsafe {
            libc::sigaction(
                signal,
                (&raw const PREVIOUS[index]).cast::<libc::sigaction>(),
                std::ptr::null_mut(),
            );
            // A fault the kernel raised happens again when the handler
            // returns, now with the previous action; one sent by a process
            // is sent again.
            if code <= 0 {
                libc::raise(signal);
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod handler {
    //! Elsewhere the program counter is not read: no reporter.
    pub(super) fn install() -> Result<(), crate::DebugError> {
        Err(crate::DebugError::UnsupportedHost {
            reason: "the crash reporter reads the program counter on Linux x86_64 and aarch64 only",
        })
    }
}

mod loaded {
    //! The objects the OS loader has mapped (`dl_iterate_phdr`), read
    //! outside any signal handler.

    /// One loaded object: where its code is and its file.
    pub(super) struct Object {
        /// The load bias (`dlpi_addr`): symbol values are relative to it.
        pub(super) base: usize,
        /// The span of its executable segments.
        pub(super) start: usize,
        pub(super) end: usize,
        /// Its path, as the loader knows it.
        pub(super) path: std::path::PathBuf,
        /// Its file name.
        pub(super) name: String,
    }

    impl Object {
        pub(super) fn contains(&self, address: usize) -> bool {
            (self.start..self.end).contains(&address)
        }
    }

    #[cfg(target_os = "linux")]
    pub(super) fn objects() -> Vec<Object> {
        use std::ffi::{CStr, c_int, c_void};

        unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
            // SAFETY: `data` is the `Vec` passed below, alive during the
            // iteration and used by nothing else meanwhile.
            let objects = unsafe { &mut *data.cast::<Vec<(usize, usize, usize, Vec<u8>)>>() };
            // SAFETY: the loader passes a valid `dl_phdr_info` whose
            // `dlpi_phdr` has `dlpi_phnum` entries and whose name is a C
            // string (possibly empty) for the call's duration.
            let info = unsafe { &*info };
            let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
                &[]
            } else {
                // SAFETY: as above.
                unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
            };
            let base = info.dlpi_addr as usize;
            let code = headers.iter().filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0);
            let start = code.clone().map(|h| base.wrapping_add(h.p_vaddr as usize)).min();
            let end = code.map(|h| base.wrapping_add((h.p_vaddr + h.p_memsz) as usize)).max();
            let name = if info.dlpi_name.is_null() {
                Vec::new()
            } else {
                // SAFETY: as above.
                unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes().to_vec()
            };
            if let (Some(start), Some(end)) = (start, end) {
                objects.push((base, start, end, name));
            }
            0
        }

        let mut raw: Vec<(usize, usize, usize, Vec<u8>)> = Vec::new();
        // SAFETY: `visit` matches the callback type and only touches
        // `raw` through `data`.
        unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut raw).cast::<c_void>()) };
        raw.into_iter()
            .map(|(base, start, end, name)| {
                use std::os::unix::ffi::OsStringExt;
                let path = if name.is_empty() {
                    std::env::current_exe().unwrap_or_default()
                } else {
                    std::path::PathBuf::from(std::ffi::OsString::from_vec(name))
                };
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                Object { base, start, end, path, name }
            })
            .collect()
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn objects() -> Vec<Object> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_line_reads_back() {
        let line = "xplug-fault\tsignal=11\tpc=7f001c\taddr=0\tat_module=libcrash.so\tat_symbol=crashy_resolve\tat_offset=1c\tat_plugin=1\n";
        let report = FaultReport::parse(&format!("resolve\n{line}")).unwrap();
        assert_eq!(report.signal, 11);
        assert_eq!(report.address, 0x7f001c);
        assert_eq!(report.data_address, Some(0));
        let at = report.at.clone().unwrap();
        assert_eq!(
            (at.module.as_str(), at.symbol.as_deref(), at.offset, at.plugin),
            ("libcrash.so", Some("crashy_resolve"), 0x1c, true)
        );
        assert_eq!(report.to_string(), "at crashy_resolve+0x1c in libcrash.so");
        assert_eq!(FaultReport::parse("resolve\nload\n"), None);
        assert_eq!(FaultReport::parse("xplug-fault\tsignal=x\tpc=1\n"), None);
    }

    #[test]
    fn outside_a_plugin_the_caller_is_named() {
        let line = "xplug-fault\tsignal=11\tpc=10\tat_module=libc.so.6\tat_offset=9a2b1\tat_plugin=0\tfrom_module=p.so\tfrom_symbol=f\tfrom_offset=10\tfrom_plugin=1";
        let report = FaultReport::parse(line).unwrap();
        assert_eq!(report.to_string(), "in libc.so.6+0x9a2b1, called from the plugin's f+0x10 in p.so");
    }

    #[test]
    fn the_line_buffer_formats_numbers_and_never_overflows() {
        let mut line = Line::new();
        line.hex(0).push(b" ").hex(0xdead_beef).push(b" ").dec(0).push(b" ").dec(1234);
        assert_eq!(line.as_bytes(), b"0 deadbeef 0 1234");
        for _ in 0..200 {
            line.push(b"0123456789");
        }
        assert_eq!(line.as_bytes().len(), 1024);
    }

    #[test]
    fn a_module_names_the_function_holding_an_address() {
        let functions = [
            ImageFunction { name: "first".into(), offset: 0x10, size: 0x10 },
            ImageFunction { name: "second\tx".into(), offset: 0x20, size: 0x8 },
        ];
        let module = Module::new("p.sos", true, (0x1000, 0x1100), 0x1000, &functions);
        assert_eq!(module.function_at(0x1015), Some((&b"first"[..], 5)));
        assert_eq!(module.function_at(0x1027), Some((&b"second?x"[..], 7)));
        assert_eq!(module.function_at(0x1028), None);
        assert_eq!(module.function_at(0x100f), None);
        assert!(module.contains(0x1000) && !module.contains(0x1100));
    }

    #[test]
    fn the_loaded_objects_include_this_test_binary() {
        let here = loaded::objects();
        let address = a_module_names_the_function_holding_an_address as *const () as usize;
        assert!(here.iter().any(|object| object.contains(address)), "{} objects", here.len());
    }
}
