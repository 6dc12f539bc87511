//! The bodies of the checks: each opens its own plugin instance from the
//! [`Subject`] and returns a [`Verdict`] (an [`Outcome`] and a detail). The list of them, with names and
//! descriptions, is [`super::catalogue::CHECKS`].

use std::ffi::{CString, c_void};

use xplug_abi::{Features, Resolution, StatusCode, Version};
use xplug_providers::raw::{RawInstance, RawLoadError, RawQuery, RawTable};
use xplug_providers::{CountingAllocator, LoadParamList, RequestSlots, compatibility};

/// A name no plugin exports.
const UNKNOWN: &str = "xplug_check_no_such_symbol_4f1d";
/// A load parameter no plugin knows.
const CHECK_PARAM: (&str, &str) = ("xplug_check_param", "1");
/// Marks a slot the check filled before calling `resolve`.
const SENTINEL_FN: usize = 0x5e17_1e00;
/// Marks a context the check filled before calling `resolve`.
const SENTINEL_CONTEXT: usize = 0xc0_47e0;

/// What a check runs against: the plugin's query function (from a library
/// the OS loader opened, or an embedded ELF image xplug mapped), the loader
/// whose rules apply, the load parameters the spec gave, and the import
/// names known to be exported (from `xplug_plugin_exports` and `--symbol`).
pub(crate) struct Subject<'a> {
    pub(super) query: Result<RawQuery<'a>, String>,
    pub(super) loader: &'static str,
    pub(super) required: Features,
    pub(super) params: LoadParamList,
    /// The load parameters the plugin declares (`xplug_plugin_params`), if
    /// it declares any.
    pub(super) declared: Option<Vec<xplug_providers::raw::ParamDeclInfo>>,
    pub(super) exports: Vec<String>,
}

/// What a check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The plugin behaves as the check requires.
    Pass,
    /// It does not.
    Fail,
    /// The check did not run (nothing to check, or an earlier fatal
    /// failure).
    Skipped,
    /// No instance could be loaded for the check: every later check that
    /// needs one would fail the same way, so the run stops.
    NotLoaded,
}

impl Outcome {
    /// The name `--json` gives it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skipped => "skip",
            Self::NotLoaded => "not_loaded",
        }
    }

    /// The outcome `--json` named `text` (a child's report).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [Self::Pass, Self::Fail, Self::Skipped, Self::NotLoaded]
            .into_iter()
            .find(|outcome| outcome.as_str() == text)
    }

    /// Whether it counts as a failed check.
    pub(crate) fn is_failure(self) -> bool {
        matches!(self, Self::Fail | Self::NotLoaded)
    }
}

/// The verdict of one check: its outcome and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) outcome: Outcome,
    pub(crate) detail: String,
}

impl Verdict {
    /// A check that did not run, and why.
    pub(crate) fn skipped(why: &str) -> Self {
        Self { outcome: Outcome::Skipped, detail: format!("skipped: {why}") }
    }

    /// A check that got no loaded instance, and why.
    fn not_loaded(why: &str) -> Self {
        Self { outcome: Outcome::NotLoaded, detail: format!("not loaded: {why}") }
    }
}

/// A failure, from any step's message (so `?` works on `Result<_, String>`).
impl From<String> for Verdict {
    fn from(detail: String) -> Self {
        Self { outcome: Outcome::Fail, detail }
    }
}

impl From<&str> for Verdict {
    fn from(detail: &str) -> Self {
        detail.to_owned().into()
    }
}

/// What a check body returns: `Ok` with its verdict, or `Err` with the
/// verdict of the step that stopped it (both read alike).
pub(super) type Checked = Result<Verdict, Verdict>;

/// A pass, with what was seen.
fn pass(detail: String) -> Checked {
    Ok(Verdict { outcome: Outcome::Pass, detail })
}

/// A failure, with what was seen.
fn fail(detail: impl Into<String>) -> Checked {
    Err(Verdict::from(detail.into()))
}

fn table_for<'a>(subject: &Subject<'a>) -> Result<RawTable<'a>, String> {
    let query = subject.query.clone()?;
    query.query(Version::LATEST).ok_or_else(|| "query(LATEST) returned NULL".to_owned())
}

/// Loads an instance with the spec's params plus `extra`, after the load
/// checks a host applies: a plugin a host would refuse is not run.
fn instance<'a>(subject: &Subject<'a>, extra: &[(&str, &str)]) -> Result<RawInstance<'a>, Verdict> {
    let table = table_for(subject)?;
    let refused = |refusal| Verdict::not_loaded(&format!("a host refuses the plugin ({refusal})"));
    let header = table.header().map_err(refused)?;
    compatibility::judge_plugin(header.as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(refused)?;
    let mut params = subject.params.clone();
    for (key, value) in extra {
        params.push(*key, *value);
    }
    table.load(&CountingAllocator::new(), &params).map_err(|error| match error {
        RawLoadError::Refused { code } => {
            Verdict::not_loaded(&format!("load returned {code} with {} parameter(s)", params.len()))
        }
        other => Verdict::not_loaded(&other.to_string()),
    })
}

pub(super) fn query_max_version_0(subject: &Subject<'_>) -> Checked {
    let query = subject.query.clone()?;
    match query.query(Version(0)) {
        None => pass("NULL".to_owned()),
        Some(_) => fail(
            "query(0) returned a table; a v0.1 plugin must return NULL when max_version is below 1 \
                        (IREE's samples invert this test)"
                .to_owned(),
        ),
    }
}

pub(super) fn query_latest(subject: &Subject<'_>) -> Checked {
    let table = table_for(subject)?;
    if table.header().map_err(|refusal| refusal.to_string())?.is_none() {
        return fail("the table's header pointer is NULL".to_owned());
    }
    let entry_points = table.entry_points();
    let missing: Vec<&str> =
        [("load", !entry_points.load), ("unload", !entry_points.unload), ("resolve", !entry_points.resolve)]
            .into_iter()
            .filter(|(_, missing)| *missing)
            .map(|(name, _)| name)
            .collect();
    if missing.is_empty() {
        pass(format!("table with header, load, unload and resolve (version {})", Version::LATEST))
    } else {
        fail(format!("the table has NULL {}", missing.join(", ")))
    }
}

pub(super) fn header(subject: &Subject<'_>) -> Checked {
    let table = table_for(subject)?;
    let header = table.header().map_err(|refusal| refusal.to_string())?.ok_or("NULL header")?;
    // What a host refuses (the same checks `Plugin` applies)...
    let mut problems: Vec<String> = [
        compatibility::judge_version(&header),
        compatibility::judge_name(&header),
        compatibility::judge_status_mode(&header),
        compatibility::judge_sanitizer(&header),
        compatibility::judge_known_features(&header),
    ]
    .into_iter()
    .filter_map(Result::err)
    .map(|refusal| refusal.to_string())
    .collect();
    // ...and what is legal but unhelpful.
    if header.name.as_deref() == Some("") {
        problems.push("name is empty".to_owned());
    }
    if header.description.is_none() {
        problems.push("description is NULL".to_owned());
    }
    if problems.is_empty() {
        pass(format!(
            "`{}` version {}, features [{}], sanitizer none",
            header.name.unwrap_or_default(),
            header.version,
            header.features.names().collect::<Vec<_>>().join(", ")
        ))
    } else {
        fail(problems.join("; "))
    }
}

fn load_cycle(subject: &Subject<'_>, extra: &[(&str, &str)]) -> Checked {
    let instance = instance(subject, extra)?;
    let held = instance.allocation_stats();
    let after = instance.unload();
    if after.live_allocations != 0 || after.live_bytes != 0 {
        return fail(format!(
            "after unload the plugin still holds {} block(s), {} byte(s)",
            after.live_allocations, after.live_bytes
        ));
    }
    pass(format!(
        "loaded holding {} block(s), {} byte(s); all freed by unload",
        held.live_allocations, held.live_bytes
    ))
}

pub(super) fn load_plain(subject: &Subject<'_>) -> Checked {
    load_cycle(subject, &[])
}

pub(super) fn load_with_params(subject: &Subject<'_>) -> Checked {
    let Some(declared) = &subject.declared else {
        return load_cycle(subject, &[CHECK_PARAM]);
    };
    // A plugin that declares its parameters must refuse any other key.
    let table = table_for(subject)?;
    let refused = |refusal| Verdict::not_loaded(&format!("a host refuses the plugin ({refusal})"));
    let header = table.header().map_err(refused)?;
    compatibility::judge_plugin(header.as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(refused)?;
    let mut params = subject.params.clone();
    params.push(CHECK_PARAM.0, CHECK_PARAM.1);
    let allocator = CountingAllocator::new();
    let declared_names = declared.iter().map(|param| param.name.as_str()).collect::<Vec<_>>().join(", ");
    match table.load(&allocator, &params) {
        Ok(instance) => {
            let _ = instance.unload();
            fail(format!(
                "the plugin declares its params ({declared_names}) but accepted the unknown key `{}`",
                CHECK_PARAM.0
            ))
        }
        Err(RawLoadError::Refused { code }) if code == StatusCode::INVALID_ARGUMENT => {
            let stats = allocator.stats();
            if stats.live_allocations != 0 {
                return fail(format!(
                    "refused the unknown key but still holds {} block(s), {} byte(s)",
                    stats.live_allocations, stats.live_bytes
                ));
            }
            pass(format!(
                "refused the unknown key `{}` with INVALID_ARGUMENT (declared: {})",
                CHECK_PARAM.0,
                if declared_names.is_empty() { "none" } else { &declared_names }
            ))
        }
        Err(RawLoadError::Refused { code }) => {
            fail(format!("refused the unknown key with {code}; a bad parameter is INVALID_ARGUMENT"))
        }
        Err(other) => fail(other.to_string()),
    }
}

/// What a resolve left: the status code, the resolution bits, and the
/// function and context slots after the call.
type Resolved = (StatusCode, Resolution, Vec<*mut c_void>, Vec<*mut c_void>);

/// Resolves `names` with every slot set to `prefill` (function, context)
/// beforehand, or empty when `None`.
fn resolve(instance: &RawInstance<'_>, names: &[CString], prefill: Option<(usize, usize)>) -> Resolved {
    let mut slots = RequestSlots::for_names(names);
    if let Some((function, context)) = prefill {
        slots.fill_all(function as *mut c_void, context as *mut c_void);
    }
    let (code, resolution) = instance.resolve(&mut slots.request());
    let (fns, contexts) = slots.into_slots();
    (code, resolution, fns, contexts)
}

fn c_names(names: &[String]) -> Vec<CString> {
    names.iter().filter_map(|name| CString::new(name.as_str()).ok()).collect()
}

pub(super) fn resolve_nothing(subject: &Subject<'_>) -> Checked {
    let instance = instance(subject, &[])?;
    let (code, resolution, _, _) = resolve(&instance, &[], None);
    if code == StatusCode::OK && resolution == Resolution::NONE {
        pass("OK".to_owned())
    } else {
        fail(format!("returned {code} with resolution bits {:#x}", resolution.0))
    }
}

pub(super) fn resolve_unknown_required(subject: &Subject<'_>) -> Checked {
    let instance = instance(subject, &[])?;
    let names = c_names(&[UNKNOWN.to_owned()]);
    let (code, _, fns, _) = resolve(&instance, &names, None);
    match (code, fns[0].is_null()) {
        (StatusCode::NOT_FOUND, true) => pass("NOT_FOUND".to_owned()),
        (_, false) => fail(format!("filled the slot of `{UNKNOWN}` (returned {code})")),
        (code, true) => fail(format!("returned {code}; a missing required import must give NOT_FOUND")),
    }
}

pub(super) fn resolve_unknown_optional(subject: &Subject<'_>) -> Checked {
    let instance = instance(subject, &[])?;
    let names = c_names(&[format!("?{UNKNOWN}")]);
    let (code, resolution, fns, _) = resolve(&instance, &names, None);
    if !fns[0].is_null() {
        return fail(format!("filled the slot of `?{UNKNOWN}`"));
    }
    if code != StatusCode::OK {
        return fail(format!("returned {code}; a missing optional import must still give OK"));
    }
    if !resolution.contains(Resolution::MISSING_OPTIONAL) {
        return fail("returned OK without the MISSING_OPTIONAL bit".to_owned());
    }
    pass("OK with MISSING_OPTIONAL".to_owned())
}

fn no_exports() -> Checked {
    Ok(Verdict::skipped("no export names known (the plugin has no xplug_plugin_exports; pass --symbol NAME)"))
}

pub(super) fn resolve_exports(subject: &Subject<'_>) -> Checked {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let (code, _, fns, _) = resolve(&instance, &names, None);
    let missing: Vec<&str> =
        subject.exports.iter().zip(&fns).filter(|(_, f)| f.is_null()).map(|(n, _)| n.as_str()).collect();
    if code == StatusCode::OK && missing.is_empty() {
        pass(format!("{} export(s) resolved", names.len()))
    } else {
        fail(format!("returned {code}; unresolved: [{}]", missing.join(", ")))
    }
}

pub(super) fn filled_slots_untouched(subject: &Subject<'_>) -> Checked {
    let instance = instance(subject, &[])?;
    // A required unknown name whose slot is already filled, then every
    // known export, all pre-filled: the plugin must skip them all and OK.
    let mut names = vec![UNKNOWN.to_owned()];
    names.extend(subject.exports.iter().cloned());
    let names = c_names(&names);
    let (code, _, fns, contexts) = resolve(&instance, &names, Some((SENTINEL_FN, SENTINEL_CONTEXT)));
    let touched = fns
        .iter()
        .zip(&contexts)
        .filter(|&(&f, &c)| f as usize != SENTINEL_FN || c as usize != SENTINEL_CONTEXT)
        .count();
    if touched > 0 {
        return fail(format!("overwrote {touched} pre-filled slot(s)"));
    }
    if code != StatusCode::OK {
        return fail(format!("returned {code} although every slot was already filled"));
    }
    pass(format!("{} pre-filled slot(s) left alone, OK", names.len()))
}

pub(super) fn repeated_resolve_stable(subject: &Subject<'_>) -> Checked {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let first = resolve(&instance, &names, None);
    let second = resolve(&instance, &names, None);
    if (first.0, first.1, &first.2, &first.3) == (second.0, second.1, &second.2, &second.3) {
        pass(format!("{} name(s), same status, functions and contexts", names.len()))
    } else {
        fail("the second resolve returned different status, functions or contexts".to_owned())
    }
}

pub(super) fn allocations_balanced(subject: &Subject<'_>) -> Checked {
    // An unknown key too, unless the plugin declares its params (it then
    // refuses the key; `load-unload-params` checks that).
    let extra: &[(&str, &str)] = if subject.declared.is_some() { &[] } else { &[CHECK_PARAM] };
    let instance = instance(subject, extra)?;
    let mut names = subject.exports.clone();
    names.push(format!("?{UNKNOWN}"));
    let names = c_names(&names);
    for _ in 0..3 {
        resolve(&instance, &names, None);
    }
    let after = instance.unload();
    if after.live_allocations == 0 && after.live_bytes == 0 {
        pass("balanced".to_owned())
    } else {
        fail(format!(
            "{} block(s), {} byte(s) still held after unload",
            after.live_allocations, after.live_bytes
        ))
    }
}
