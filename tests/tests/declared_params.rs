//! A declared load parameter is parsed by one function on both sides: for
//! every declared type and its edge values, the host's check before `load`
//! (`xplug_providers::compatibility::judge_params`) refuses exactly the values an
//! `xplug-sdk` plugin would refuse, and a value it lets through is read by
//! the plugin (`LoadParams::parse`) as the value `ParamKind::parse` gives.
//! A host refusal is the host's (`Incompatible`), never a failed `load`.

use std::sync::Mutex;

use xplug_manager::providers::{
    Error, LoadParamList, STATIC, compatibility::Incompatibility, static_plugins,
};
use xplug_sdk::{Environment, ImportArgs, LoadParams, ParamKind, ParamValue, PluginState};

/// What the plugin's `load` read, as `ParamValue`s with owned text.
#[derive(Clone, Debug, PartialEq)]
enum Read {
    Str(String),
    Bool(bool),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    Usize(usize),
    F32(f32),
    F64(f64),
}

impl Read {
    fn of(value: ParamValue<'_>) -> Self {
        match value {
            ParamValue::Str(text) => Self::Str(text.to_owned()),
            ParamValue::Bool(value) => Self::Bool(value),
            ParamValue::I32(value) => Self::I32(value),
            ParamValue::I64(value) => Self::I64(value),
            ParamValue::U32(value) => Self::U32(value),
            ParamValue::U64(value) => Self::U64(value),
            ParamValue::Usize(value) => Self::Usize(value),
            ParamValue::F32(value) => Self::F32(value),
            ParamValue::F64(value) => Self::F64(value),
            other => panic!("a kind this test does not know: {other:?}"),
        }
    }
}

/// The values the last successful `load` read, one per given key.
static READ: Mutex<Vec<Read>> = Mutex::new(Vec::new());

/// Reads every given parameter with `LoadParams::parse` as its declared
/// type's Rust type.
pub struct Reader;

impl PluginState for Reader {
    fn load(_env: &Environment<'_>, params: &LoadParams<'_>) -> Result<Self, xplug_sdk::Error> {
        let mut read = Vec::new();
        for param in params.iter() {
            let key = param.key().expect("declared keys are UTF-8");
            let value = match key {
                "s" => params.parse::<&str>(key)?.map(|v| Read::Str(v.to_owned())),
                "b" => params.parse::<bool>(key)?.map(Read::Bool),
                "i32" => params.parse::<i32>(key)?.map(Read::I32),
                "i64" => params.parse::<i64>(key)?.map(Read::I64),
                "u32" => params.parse::<u32>(key)?.map(Read::U32),
                "u64" => params.parse::<u64>(key)?.map(Read::U64),
                "usize" => params.parse::<usize>(key)?.map(Read::Usize),
                "f32" => params.parse::<f32>(key)?.map(Read::F32),
                "f64" => params.parse::<f64>(key)?.map(Read::F64),
                other => panic!("undeclared key {other} reached load"),
            };
            read.push(value.expect("a given key is present"));
        }
        *READ.lock().unwrap() = read;
        Ok(Self)
    }
}

/// The args of the plugin's one import, which does nothing.
#[derive(ImportArgs)]
#[repr(C)]
pub struct Nothing {
    /// Unused.
    pub unused: u32,
}

#[xplug_sdk::plugin(
    name = "declared_kinds",
    state = Reader,
    params(
        s: str "text",
        b: bool "a switch",
        i32: i32 "a signed 32-bit integer",
        i64: i64 "a signed 64-bit integer",
        u32: u32 "an unsigned 32-bit integer",
        u64: u64 "an unsigned 64-bit integer",
        usize: usize "a size",
        f32: f32 "a float",
        f64: f64 "a double"
    )
)]
mod plugin {
    use super::*;

    #[import]
    fn declared_kinds_nothing(_args: &mut Nothing) {}
}

/// The key this test declares for `kind`.
fn key_of(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Str => "s",
        ParamKind::Bool => "b",
        other => other.name(),
    }
}

const EDGES: &[&[u8]] = &[
    b"",
    b" ",
    b"true",
    b"false",
    b"1",
    b"0",
    b"-0",
    b"+0",
    b"yes",
    b"TRUE",
    b" 1",
    b"1 ",
    b"-1",
    b"+7",
    b"2147483647",
    b"2147483648",
    b"-2147483648",
    b"-2147483649",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551615",
    b"18446744073709551616",
    b"0x10",
    b"1_000",
    b"7.5",
    b".5",
    b"5.",
    b"-1e-3",
    b"3.4028235e38",
    b"3.5e38",
    b"1e308",
    b"1e309",
    b"inf",
    b"-inf",
    b"NaN",
    b"1,5",
    b"abc",
    b"\xff",
    b"\xc3\xa9",
];

#[test]
fn the_hosts_check_and_the_plugins_parse_agree_for_every_declared_type() {
    let registration = static_plugins()
        .into_iter()
        .find(|registration| registration.name() == "declared_kinds")
        .expect("the test's plugin is registered");
    // The report behind this test: `verbose=1` for a declared `bool`
    // passed the check, then the plugin's own parse refused it.
    let _plugin = STATIC
        .registration_code(registration)
        .load(&LoadParamList::new().with("b", "1"))
        .expect("`b=1` loads");
    assert_eq!(*READ.lock().unwrap(), [Read::Bool(true)]);

    let mut accepted = 0;
    for kind in ParamKind::ALL {
        for &value in EDGES {
            let shown = format!("{}={:?}", kind.name(), String::from_utf8_lossy(value));
            let params = LoadParamList::new().with(key_of(kind), value);
            match (STATIC.registration_code(registration).load(&params), kind.parse(value)) {
                (Ok(_plugin), Some(expected)) => {
                    accepted += 1;
                    assert_eq!(*READ.lock().unwrap(), [Read::of(expected)], "{shown}");
                }
                (Err(Error::Incompatible { reason, .. }), None) => {
                    assert!(
                        matches!(&reason, Incompatibility::InvalidParamValue { kind: refused, .. } if *refused == kind),
                        "{shown}: {reason}"
                    );
                }
                (Ok(_), None) => panic!("{shown}: loaded a value ParamKind::parse refuses"),
                (Err(error), parsed) => panic!("{shown}: refused ({error}) though parsed as {parsed:?}"),
            }
        }
    }
    // Some of each: the table exercises both outcomes for every kind.
    assert!(accepted > ParamKind::ALL.len() * 3, "only {accepted} values were accepted");
}
