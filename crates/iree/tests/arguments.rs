//! `Session::prepare` on a compiled program with scalar and 0-d tensor
//! parameters (`tests/iree/scalars.mlir`): arguments are matched with the
//! function's calling convention as `iree-run-module` matches its
//! `--input` flags, and what cannot be matched is a typed error before
//! anything runs.

use xplug_fixtures::iree_e2e::{self, Program};
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::{Argument, DeviceKind, ElementType, Error, Module, Runtime, Session, Tensor, Value};
use xplug_manager::Manager;

const SCALARS: Program = Program { file: "scalars.mlir", function: "double", outputs: &[] };

fn with_session(test: impl FnOnce(&Module, &Session)) {
    let root = xplug_fixtures::workspace_root();
    let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
    let path =
        iree_e2e::compile(&root, &prepared.tools, SCALARS, &prepared.work).expect("the program compiles");
    let runtime = Runtime::new().unwrap();
    let device = runtime.device(DeviceKind::LocalSync, Manager::new()).unwrap();
    let module = Module::from_file(&runtime, &path).unwrap();
    let session = Session::new(&device, &module).unwrap();
    test(&module, &session);
}

fn call(session: &Session, function: &str, arguments: &[Argument<'_>]) -> Result<Vec<Value>, Error> {
    session.prepare(function, arguments)?.invoke()?.values()
}

#[test]
fn scalars_and_zero_d_tensors_go_in_and_come_out() {
    with_session(|module, session| {
        assert_eq!(
            call(session, "double", &[Argument::Text(" 21 ")]).unwrap(),
            [Value::Integer { value: 42, bits: 32 }]
        );
        assert_eq!(
            call(session, "double", &[Argument::Text("(null)")]).unwrap(),
            [Value::Integer { value: 0, bits: 32 }]
        );
        assert_eq!(
            call(session, "scale", &[Argument::Text("1.5"), Argument::Text("3")]).unwrap(),
            [Value::Float { value: 4.5, bits: 32 }, Value::Integer { value: 6, bits: 64 }]
        );
        let three = Tensor::new(vec![], ElementType::F32, 3.0f32.to_ne_bytes().to_vec()).unwrap();
        for argument in [Argument::Tensor(three.view()), Argument::Text("f32=3")] {
            let results = call(session, "square", &[argument]).unwrap();
            let [Value::Tensor(nine)] = results.as_slice() else { panic!("a tensor: {results:?}") };
            assert_eq!((nine.shape(), nine.to_f32().unwrap()), (&[][..], vec![9.0]));
        }
        // The function is found in the module alone, as IREE's tool finds it.
        let function = module.function(b"double").unwrap();
        assert_eq!((function.name(), function.argument_types()), (&b"double"[..], &b"i"[..]));
        for name in ["module.double", "hal.ex.file.from_memory", "doubel"] {
            let error = module.function(name.as_bytes()).unwrap_err();
            assert!(matches!(error, Error::NoSuchFunction { .. }), "{name}: {error:?}");
        }
        assert!(matches!(
            module.function(b"doubel"),
            Err(Error::NoSuchFunction { suggestion: Some(ref name), .. }) if name == "double"
        ));
        let Err(Error::FunctionNotGiven { functions, .. }) = module.only_function() else {
            panic!("three exports")
        };
        assert_eq!(functions, ["double", "scale", "square"]);
    });
}

/// Files hold several arguments: `@` reads the first array, `+` the next
/// one, `*` all that are left; `TYPE=@FILE` and `TYPE=+FILE` raw bytes.
#[test]
fn files_feed_arguments_in_turn() {
    with_session(|_, session| {
        let dir = tempfile::tempdir().unwrap();
        let npy = dir.path().join("both.npy");
        let scalar = |value: f32| xplug_npy::NpyArray {
            descr: "<f4".into(),
            shape: vec![],
            data: value.to_le_bytes().to_vec(),
        };
        std::fs::write(&npy, [xplug_npy::encode(&scalar(2.0)), xplug_npy::encode(&scalar(5.0))].concat())
            .unwrap();
        let npy = npy.display().to_string();
        let square = |text: &str| match call(session, "square", &[Argument::Text(text)]) {
            Ok(values) => match values.as_slice() {
                [Value::Tensor(tensor)] => tensor.to_f32().unwrap()[0],
                other => panic!("{other:?}"),
            },
            Err(error) => panic!("{text}: {error}"),
        };
        assert_eq!(square(&format!("@{npy}")), 4.0);
        // Each prepare starts afresh: `+` on a path not read yet is its start.
        assert_eq!(square(&format!("+{npy}")), 4.0);
        let both = [Argument::Text(&format!("@{npy}")), Argument::Text(&format!("+{npy}"))];
        let error = call(session, "square", &both).unwrap_err();
        assert!(matches!(error, Error::Input { index: 1, .. }), "two arrays for one parameter: {error:?}");
        let all = format!("*{npy}");
        let error = call(session, "square", &[Argument::Text(&all)]).unwrap_err();
        assert!(matches!(error, Error::Input { index: 0, .. }), "`*` reads both arrays: {error:?}");
        let raw = dir.path().join("values.bin");
        std::fs::write(&raw, [3.0f32.to_ne_bytes(), 7.0f32.to_ne_bytes()].concat()).unwrap();
        let raw = raw.display().to_string();
        assert_eq!(square(&format!("f32=@{raw}")), 9.0);
        // 8 bytes are there for an f64: the arguments are made, and IREE's
        // call refuses the type.
        let f64_input = format!("f64=+{raw}");
        let ready = session.prepare("square", [Argument::Text(&f64_input)]);
        let error = ready.expect("the bytes are there").invoke().err().expect("square takes f32");
        assert!(matches!(error, Error::Call { .. }), "{error:?}");
        let error = call(session, "square", &[Argument::Text(&format!("4xf32=@{raw}"))]).unwrap_err();
        assert!(error.to_string().contains("needs 16 bytes but the file holds 8 more"), "{error}");
    });
}

#[test]
fn arguments_that_do_not_fit_the_signature_are_refused_before_the_call() {
    with_session(|_, session| {
        let three = Tensor::new(vec![], ElementType::F32, 3.0f32.to_ne_bytes().to_vec()).unwrap();
        let refused = |function: &str, arguments: &[Argument<'_>]| match session.prepare(function, arguments)
        {
            Ok(_) => panic!("{function:?} {arguments:?} was accepted"),
            Err(error) => error,
        };
        let surplus = refused("double", &[Argument::Text("1"), Argument::Text("2")]);
        assert!(matches!(&surplus, Error::Input { index: 1, .. }), "{surplus:?}");
        assert!(surplus.to_string().contains("one too many"), "{surplus}");
        let tensor_for_scalar = refused("double", &[Argument::Tensor(three.view())]);
        assert!(
            tensor_for_scalar.to_string().contains("takes an i32 here, not a tensor"),
            "{tensor_for_scalar}"
        );
        // IREE's own parser refuses `i32=21` for an `i32` parameter.
        let typed = refused("double", &[Argument::Text("i32=21")]);
        let Error::Argument { source, .. } = &typed else { panic!("{typed:?}") };
        assert!(source.text.contains("parsing value `i32=21` as i32"), "{source}");
        let bare = refused("square", &[Argument::Text("3")]);
        assert!(bare.to_string().contains("shape and type"), "{bare}");
        let empty = refused("square", &[Argument::Text("  ")]);
        assert!(matches!(empty, Error::Input { .. }), "{empty:?}");
        for form in ["@a.bin", "+a.txt"] {
            let error = refused("square", &[Argument::Text(form)]);
            assert!(matches!(error, Error::Input { .. }), "{form}: {error:?}");
        }
        let missing = refused("square", &[Argument::Text("@/nonexistent/a.npy")]);
        assert!(matches!(missing, Error::FileRead { .. }), "{missing:?}");
        // A long input is quoted in part, by xplug and in IREE's status.
        let long_shape = format!("{}xf32=1", "9".repeat(100_000));
        let error = refused("square", &[Argument::Text(&long_shape)]);
        let Error::Argument { source, input, .. } = &error else { panic!("{error:?}") };
        assert!(
            source.text.contains("shape[0] invalid value") && source.text.len() < 500,
            "{}",
            source.text.len()
        );
        assert!(input.ends_with("... (100006 bytes)"), "{input}");
        let long = format!("4xf32={}", "1,".repeat(10_000));
        let error = refused("double", &[Argument::Text(&long), Argument::Text(&long)]);
        assert!(error.to_string().len() < 300, "{}", error.to_string().len());
        // Too few arguments are IREE's invocation's to refuse, after the
        // call was made ready (as `iree-run-module` prints `EXEC` first).
        let ready = session.prepare("double", [] as [Argument<'_>; 0]).expect("too few is left to IREE");
        let error = ready.invoke().err().expect("IREE refuses the call");
        assert!(matches!(&error, Error::Call { .. }), "{error:?}");
    });
}
