//! The bodies of the checks: each opens its own plugin instance from the
//! [`Subject`] and returns a [`Verdict`]. The list of them, with names and
//! descriptions, is [`super::catalogue::CHECKS`].

use std::ffi::{CString, c_void};

use xplug_abi::{Features, Resolution, StatusCode, Version};
use xplug_providers::raw::{RawInstance, RawLoadError, RawQuery, RawTable};
use xplug_providers::{CountingAllocator, LoadParamList, RequestSlots, checks};

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

/// The verdict of one check: `Ok(detail)` or `Err(detail)`.
pub(super) type Verdict = Result<String, String>;

fn table_for<'a>(subject: &Subject<'a>) -> Result<RawTable<'a>, String> {
    let query = subject.query.clone()?;
    query.query(Version::LATEST).ok_or_else(|| "query(LATEST) returned NULL".to_owned())
}

/// Loads an instance with the spec's params plus `extra`, after the load
/// checks a host applies: a plugin a host would refuse is not run.
fn instance<'a>(subject: &Subject<'a>, extra: &[(&str, &str)]) -> Result<RawInstance<'a>, String> {
    let table = table_for(subject)?;
    let refused = |refusal| format!("{NOT_LOADED}a host refuses the plugin ({refusal})");
    let header = table.header().map_err(refused)?;
    checks::check_plugin(header.as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(refused)?;
    let mut params = subject.params.clone();
    for (key, value) in extra {
        params.push(*key, *value);
    }
    table.load(&CountingAllocator::new(), &params).map_err(|error| match error {
        RawLoadError::Refused { code } => {
            format!("{NOT_LOADED}load returned {code} with {} parameter(s)", params.len())
        }
        other => format!("{NOT_LOADED}{other}"),
    })
}

/// How the detail of a check that could not get a loaded instance starts:
/// every later check that needs one would fail the same way, so such a
/// failure is fatal ([`super::catalogue::Outcome`]).
pub(crate) const NOT_LOADED: &str = "not loaded: ";

pub(super) fn query_max_version_0(subject: &Subject<'_>) -> Verdict {
    let query = subject.query.clone()?;
    match query.query(Version(0)) {
        None => Ok("NULL".to_owned()),
        Some(_) => {
            Err("query(0) returned a table; a v0.1 plugin must return NULL when max_version is below 1 \
                        (IREE's samples invert this test)"
                .to_owned())
        }
    }
}

pub(super) fn query_latest(subject: &Subject<'_>) -> Verdict {
    let table = table_for(subject)?;
    if table.header().map_err(|refusal| refusal.to_string())?.is_none() {
        return Err("the table's header pointer is NULL".to_owned());
    }
    let entry_points = table.entry_points();
    let missing: Vec<&str> =
        [("load", !entry_points.load), ("unload", !entry_points.unload), ("resolve", !entry_points.resolve)]
            .into_iter()
            .filter(|(_, missing)| *missing)
            .map(|(name, _)| name)
            .collect();
    if missing.is_empty() {
        Ok(format!("table with header, load, unload and resolve (version {})", Version::LATEST))
    } else {
        Err(format!("the table has NULL {}", missing.join(", ")))
    }
}

pub(super) fn header(subject: &Subject<'_>) -> Verdict {
    let table = table_for(subject)?;
    let header = table.header().map_err(|refusal| refusal.to_string())?.ok_or("NULL header")?;
    // What a host refuses (the same checks `Plugin` applies)...
    let mut problems: Vec<String> = [
        checks::check_version(&header),
        checks::check_name(&header),
        checks::check_status_mode(&header),
        checks::check_sanitizer(&header),
        checks::check_known_features(&header),
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
        Ok(format!(
            "`{}` version {}, features [{}], sanitizer none",
            header.name.unwrap_or_default(),
            header.version,
            header.features.names().collect::<Vec<_>>().join(", ")
        ))
    } else {
        Err(problems.join("; "))
    }
}

fn load_cycle(subject: &Subject<'_>, extra: &[(&str, &str)]) -> Verdict {
    let instance = instance(subject, extra)?;
    let held = instance.allocation_stats();
    let after = instance.unload();
    if after.live_allocations != 0 || after.live_bytes != 0 {
        return Err(format!(
            "after unload the plugin still holds {} block(s), {} byte(s)",
            after.live_allocations, after.live_bytes
        ));
    }
    Ok(format!(
        "loaded holding {} block(s), {} byte(s); all freed by unload",
        held.live_allocations, held.live_bytes
    ))
}

pub(super) fn load_plain(subject: &Subject<'_>) -> Verdict {
    load_cycle(subject, &[])
}

pub(super) fn load_with_params(subject: &Subject<'_>) -> Verdict {
    let Some(declared) = &subject.declared else {
        return load_cycle(subject, &[CHECK_PARAM]);
    };
    // A plugin that declares its parameters must refuse any other key.
    let table = table_for(subject)?;
    let refused = |refusal| format!("{NOT_LOADED}a host refuses the plugin ({refusal})");
    let header = table.header().map_err(refused)?;
    checks::check_plugin(header.as_ref(), table.entry_points(), subject.loader, subject.required)
        .map_err(refused)?;
    let mut params = subject.params.clone();
    params.push(CHECK_PARAM.0, CHECK_PARAM.1);
    let allocator = CountingAllocator::new();
    let declared_names = declared.iter().map(|param| param.name.as_str()).collect::<Vec<_>>().join(", ");
    match table.load(&allocator, &params) {
        Ok(instance) => {
            let _ = instance.unload();
            Err(format!(
                "the plugin declares its params ({declared_names}) but accepted the unknown key `{}`",
                CHECK_PARAM.0
            ))
        }
        Err(RawLoadError::Refused { code }) if code == StatusCode::INVALID_ARGUMENT => {
            let stats = allocator.stats();
            if stats.live_allocations != 0 {
                return Err(format!(
                    "refused the unknown key but still holds {} block(s), {} byte(s)",
                    stats.live_allocations, stats.live_bytes
                ));
            }
            Ok(format!(
                "refused the unknown key `{}` with INVALID_ARGUMENT (declared: {})",
                CHECK_PARAM.0,
                if declared_names.is_empty() { "none" } else { &declared_names }
            ))
        }
        Err(RawLoadError::Refused { code }) => {
            Err(format!("refused the unknown key with {code}; a bad parameter is INVALID_ARGUMENT"))
        }
        Err(other) => Err(other.to_string()),
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

pub(super) fn resolve_nothing(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let (code, resolution, _, _) = resolve(&instance, &[], None);
    if code == StatusCode::OK && resolution == Resolution::NONE {
        Ok("OK".to_owned())
    } else {
        Err(format!("returned {code} with resolution bits {:#x}", resolution.0))
    }
}

pub(super) fn resolve_unknown_required(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let names = c_names(&[UNKNOWN.to_owned()]);
    let (code, _, fns, _) = resolve(&instance, &names, None);
    match (code, fns[0].is_null()) {
        (StatusCode::NOT_FOUND, true) => Ok("NOT_FOUND".to_owned()),
        (_, false) => Err(format!("filled the slot of `{UNKNOWN}` (returned {code})")),
        (code, true) => Err(format!("returned {code}; a missing required import must give NOT_FOUND")),
    }
}

pub(super) fn resolve_unknown_optional(subject: &Subject<'_>) -> Verdict {
    let instance = instance(subject, &[])?;
    let names = c_names(&[format!("?{UNKNOWN}")]);
    let (code, resolution, fns, _) = resolve(&instance, &names, None);
    if !fns[0].is_null() {
        return Err(format!("filled the slot of `?{UNKNOWN}`"));
    }
    if code != StatusCode::OK {
        return Err(format!("returned {code}; a missing optional import must still give OK"));
    }
    if !resolution.contains(Resolution::MISSING_OPTIONAL) {
        return Err("returned OK without the MISSING_OPTIONAL bit".to_owned());
    }
    Ok("OK with MISSING_OPTIONAL".to_owned())
}

fn no_exports() -> Verdict {
    Ok(format!(
        "{}no export names known (the plugin has no xplug_plugin_exports; pass --symbol NAME)",
        super::catalogue::SKIPPED
    ))
}

pub(super) fn resolve_exports(subject: &Subject<'_>) -> Verdict {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let (code, _, fns, _) = resolve(&instance, &names, None);
    let missing: Vec<&str> =
        subject.exports.iter().zip(&fns).filter(|(_, f)| f.is_null()).map(|(n, _)| n.as_str()).collect();
    if code == StatusCode::OK && missing.is_empty() {
        Ok(format!("{} export(s) resolved", names.len()))
    } else {
        Err(format!("returned {code}; unresolved: [{}]", missing.join(", ")))
    }
}

pub(super) fn filled_slots_untouched(subject: &Subject<'_>) -> Verdict {
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
        return Err(format!("overwrote {touched} pre-filled slot(s)"));
    }
    if code != StatusCode::OK {
        return Err(format!("returned {code} although every slot was already filled"));
    }
    Ok(format!("{} pre-filled slot(s) left alone, OK", names.len()))
}

pub(super) fn repeated_resolve_stable(subject: &Subject<'_>) -> Verdict {
    if subject.exports.is_empty() {
        return no_exports();
    }
    let instance = instance(subject, &[])?;
    let names = c_names(&subject.exports);
    let first = resolve(&instance, &names, None);
    let second = resolve(&instance, &names, None);
    if (first.0, first.1, &first.2, &first.3) == (second.0, second.1, &second.2, &second.3) {
        Ok(format!("{} name(s), same status, functions and contexts", names.len()))
    } else {
        Err("the second resolve returned different status, functions or contexts".to_owned())
    }
}

pub(super) fn allocations_balanced(subject: &Subject<'_>) -> Verdict {
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
        Ok("balanced".to_owned())
    } else {
        Err(format!(
            "{} block(s), {} byte(s) still held after unload",
            after.live_allocations, after.live_bytes
        ))
    }
}
