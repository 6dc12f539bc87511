use std::ffi::CString;
use std::hint::black_box;
use xplug_providers::{ImportProvider, LoadParamList, Plugin, ResolveRequest, SymbolName};
fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = xplug_tests::build_standalone_c_sample(dir.path());
    let name = CString::new("simple_mul_workgroup").unwrap();
    let n: usize = std::env::args().nth(1).map_or(100000, |s| s.parse().unwrap());
    let mode = std::env::args().nth(2).unwrap_or_default();
    let t = std::time::Instant::now();
    for _ in 0..n {
        let plugin = if mode == "so" {
            unsafe { Plugin::load_system_library(&path, &LoadParamList::new()) }.unwrap()
        } else {
            unsafe { Plugin::load_embedded_elf(&path, &LoadParamList::new()) }.unwrap()
        };
        let names = [SymbolName::new(&name)];
        let (mut fns, mut contexts) = ([std::ptr::null_mut(); 1], [std::ptr::null_mut(); 1]);
        let mut request = ResolveRequest::new(&names, &mut fns, &mut contexts).unwrap();
        plugin.resolve(&mut request).unwrap();
        black_box(fns[0]);
    }
    println!("{:.2} us/iter", t.elapsed().as_secs_f64() * 1e6 / n as f64);
}
