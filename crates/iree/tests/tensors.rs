//! Typed tensors through a compiled program (`tests/iree/element_types.mlir`,
//! pinned `iree-compile`): Rust slices of every element type go in as views
//! (no copy on the Rust side), results come out typed, copied
//! (`Tensor::to_vec`) or read in place (`CallResults::tensor`).

use xplug_fixtures::iree_e2e;
use xplug_fixtures::plugins::PluginProfile;
use xplug_iree::half::{bf16, f16};
use xplug_iree::{
    Argument, Call, DeviceKind, Element, ElementType, Error, Module, Report, Runtime, Session, Tensor,
    TensorView, Value,
};
use xplug_manager::Manager;

/// The compiled program, made once per process.
fn module_path() -> &'static std::path::Path {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let root = xplug_fixtures::workspace_root();
        let prepared = iree_e2e::prepare(&root, PluginProfile::Debug).expect("IREE is ready");
        let work = prepared.work.join("typed_tensors");
        std::fs::create_dir_all(&work).unwrap();
        let path = work.join("element_types.vmfb");
        iree_e2e::compile_file(&prepared.tools, &root.join("tests/iree/element_types.mlir"), &path)
            .expect("element_types compiles");
        path
    })
}

fn with_session(kind: DeviceKind, test: impl FnOnce(&Session)) {
    let runtime = Runtime::new().unwrap();
    let device = runtime.device(kind, Manager::new()).unwrap();
    let module = Module::from_file(&runtime, module_path()).unwrap();
    let session = Session::new(&device, &module).unwrap();
    test(&session);
}

/// Result `index` read both ways: copied (`Value` → `Tensor::to_vec`) and
/// in place (`CallResults::tensor`), which must agree.
fn read<T: Element + PartialEq>(results: &xplug_iree::CallResults, index: usize) -> Vec<T> {
    let Value::Tensor(copied) = results.value(index).unwrap() else { panic!("result {index} is a tensor") };
    let copied = copied.to_vec::<T>().unwrap();
    let mapped = results.tensor(index).unwrap();
    assert_eq!(mapped.shape(), [3]);
    assert_eq!(mapped.as_slice::<T>().unwrap(), copied.as_slice(), "result {index}");
    copied
}

#[test]
fn slices_of_every_element_type_go_in_as_views_and_come_out_typed() {
    for kind in [DeviceKind::LocalSync, DeviceKind::LocalTask { workers: 2 }] {
        with_session(kind, |session| {
            let i8s = [-3i8, 0, 126];
            let i16s = [-300i16, 0, 300];
            let i32s = [i32::MIN, -1, 41];
            let i64s = [-(1i64 << 40), 0, 1 << 40];
            let f16s = [f16::from_f32(0.5), f16::from_f32(-1.25), f16::from_f32(1000.0)];
            let bf16s = [bf16::from_f32(0.5), bf16::from_f32(-1.25), bf16::from_f32(3.0e38)];
            let f32s = [0.25f32, -7.5, 1e30];
            let f64s = [0.125f64, -1e300, 3.0];
            let u8s = [0u8, 128, 255];
            let u16s = [0u16, 40000, 65535];
            let u32s = [0u32, 1 << 31, u32::MAX];
            let u64s = [0u64, 1 << 63, u64::MAX];
            let s8s = [-128i8, 0, 127];
            let s64s = [i64::MIN, 0, i64::MAX];
            let shape = [3usize];
            let views = [
                TensorView::new(&shape, &i8s).unwrap(),
                TensorView::new(&shape, &i16s).unwrap(),
                TensorView::new(&shape, &i32s).unwrap(),
                TensorView::new(&shape, &i64s).unwrap(),
                TensorView::new(&shape, &f16s).unwrap(),
                TensorView::new(&shape, &bf16s).unwrap(),
                TensorView::new(&shape, &f32s).unwrap(),
                TensorView::new(&shape, &f64s).unwrap(),
                TensorView::new(&shape, &u8s).unwrap(),
                TensorView::new(&shape, &u16s).unwrap(),
                TensorView::new(&shape, &u32s).unwrap(),
                TensorView::new(&shape, &u64s).unwrap(),
                TensorView::new(&shape, &s8s).unwrap(),
                TensorView::new(&shape, &s64s).unwrap(),
            ];
            // A view borrows the caller's slice: the bytes IREE copies from
            // are the slice itself.
            assert_eq!(views[6].data().as_ptr(), f32s.as_ptr().cast());
            let arguments: Vec<Argument<'_>> = views.iter().copied().map(Argument::from).collect();
            let results = session.prepare("types", &arguments).unwrap().invoke().unwrap();
            assert_eq!(results.len(), 14);
            let plus_one =
                |values: &[i64]| values.iter().map(|value| value.wrapping_add(1)).collect::<Vec<_>>();
            assert_eq!(read::<i8>(&results, 0), i8s.map(|v| v.wrapping_add(1)));
            assert_eq!(read::<i16>(&results, 1), i16s.map(|v| v + 1));
            assert_eq!(read::<i32>(&results, 2), i32s.map(|v| v + 1));
            assert_eq!(read::<i64>(&results, 3), plus_one(&i64s));
            assert_eq!(read::<f16>(&results, 4), f16s.map(|v| v + v));
            assert_eq!(read::<bf16>(&results, 5), bf16s.map(|v| v + v));
            assert_eq!(read::<f32>(&results, 6), f32s.map(|v| v + v));
            assert_eq!(read::<f64>(&results, 7), f64s.map(|v| v + v));
            assert_eq!(read::<u8>(&results, 8), u8s);
            assert_eq!(read::<u16>(&results, 9), u16s);
            assert_eq!(read::<u32>(&results, 10), u32s);
            assert_eq!(read::<u64>(&results, 11), u64s);
            assert_eq!(read::<i8>(&results, 12), s8s);
            assert_eq!(read::<i64>(&results, 13), s64s);

            // The element type decides what a result reads as.
            let mapped = results.tensor(6).unwrap();
            assert!(matches!(
                mapped.as_slice::<i32>(),
                Err(Error::TensorElementType { element_type: ElementType::F32, rust_type: "i32" })
            ));
            assert_eq!(format!("{mapped:?}"), "MappedTensor(f32 [3]: [0.5, -15.0, 2e30])");
            // A mapped result feeds the next call without a copy here.
            let again = session
                .prepare(
                    "types",
                    &[
                        views[0],
                        views[1],
                        views[2],
                        views[3],
                        views[4],
                        views[5],
                        mapped.view(),
                        views[7],
                        views[8],
                        views[9],
                        views[10],
                        views[11],
                        views[12],
                        views[13],
                    ],
                )
                .and_then(Call::invoke)
                .unwrap();
            assert_eq!(read::<f32>(&again, 6), f32s.map(|v| 4.0 * v));
        });
    }
}

#[test]
fn owned_tensors_still_call_and_errors_show_their_cause() {
    with_session(DeviceKind::LocalSync, |session| {
        // Too few arguments: IREE refuses the call; the report shows why.
        let ones = Tensor::from_slice(&[3], &[1i8, 1, 1]).unwrap();
        let error =
            session.prepare("types", [&ones]).and_then(Call::invoke).err().expect("IREE refuses the call");
        assert!(matches!(error, Error::Call { .. }), "{error:?}");
        let report = Report::from(error);
        let text = format!("{report:?}");
        assert!(text.starts_with("call to `types` failed\n  caused by: "), "{text}");
        assert!(text.contains("INVALID_ARGUMENT") || text.contains("input list"), "{text}");
    });
}

#[test]
fn typed_constructors_check_sizes_and_readers_check_types_and_values() {
    let tensor = Tensor::from_slice(&[2, 2], &[1u16, 2, 3, 4]).unwrap();
    assert_eq!(tensor.element_type(), ElementType::UI16);
    assert_eq!(tensor.to_vec::<u16>().unwrap(), [1, 2, 3, 4]);
    assert_eq!(format!("{tensor:?}"), "Tensor(ui16 [2, 2]: [1, 2, 3, 4])");
    assert!(matches!(
        Tensor::from_slice(&[2, 3], &[1.0f32; 5]),
        Err(Error::TensorSize { expected: 24, found: 20, .. })
    ));
    assert!(matches!(
        tensor.to_vec::<i16>(),
        Err(Error::TensorElementType { element_type: ElementType::UI16, rust_type: "i16" })
    ));
    // Signless integers read as either signedness of their width.
    let signless = Tensor::new(vec![2], ElementType::I32, [7i32, -7].map(i32::to_ne_bytes).concat()).unwrap();
    assert_eq!(signless.to_vec::<i32>().unwrap(), [7, -7]);
    assert_eq!(signless.to_vec::<u32>().unwrap(), [7, (-7i32).cast_unsigned()]);
    // A bool byte must be 0 or 1.
    let bools = Tensor::new(vec![3], ElementType::BOOL, vec![1, 0, 2]).unwrap();
    assert!(matches!(
        bools.to_vec::<bool>(),
        Err(Error::TensorElementValue { rust_type: "bool", index: 2, .. })
    ));
    assert_eq!(format!("{bools:?}"), "Tensor(i1 [3]: [true, false, <invalid [02]>])");
    let long = Tensor::from_slice(&[10], &[0.5f64; 10]).unwrap();
    assert_eq!(format!("{long:?}"), "Tensor(f64 [10]: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, ... 2 more])");
}

/// Every other test of this file again, under valgrind (memcheck, see
/// `xplug_fixtures::valgrind`): the views handed to IREE and the mappings
/// of results must not be read out of bounds, after free, or leaked.
#[test]
fn every_test_here_is_memcheck_clean() {
    if std::env::var_os(xplug_fixtures::valgrind::RERUN_ENV).is_none() {
        module_path();
    }
    let Some(output) = xplug_fixtures::valgrind::rerun_this_test_binary("every_test_here_is_memcheck_clean")
    else {
        return;
    };
    xplug_fixtures::valgrind::assert_clean(&output, 0, "xplug-iree's typed tensor tests");
}
