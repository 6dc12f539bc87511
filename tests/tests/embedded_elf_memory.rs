//! The embedded ELF loader's memory: each segment of a loaded `.sos` gets
//! its own page protections, RELRO is read-only, nothing is writable and
//! executable, and the image is unmapped when dropped (read back from
//! `/proc/self/maps`). A test binary of its own: no other test thread maps
//! memory that could land where the dropped image was.

use std::path::PathBuf;

use xplug_elf::ElfImage;

fn sos(name: &str) -> PathBuf {
    let root = xtask::workspace_root();
    let profile = xtask::plugins::PluginProfile::Debug;
    let built = xtask::plugins::build(&root, profile).expect("the example plugins build");
    assert!(built.iter().all(|plugin| plugin.path.is_some()), "a plugin was skipped: {built:?}");
    xtask::plugins::output_dir(&root, profile).join(format!("{name}.sos"))
}

/// The page protections of the mapping, from `/proc/self/maps`.
#[cfg(target_os = "linux")]
fn protections(base: usize, size: u64) -> Vec<(usize, usize, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let end = base + size as usize;
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (range, perms) = (fields.next()?, fields.next()?);
            let (start, stop) = range.split_once('-')?;
            let (start, stop) =
                (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(stop, 16).ok()?);
            (start < end && stop > base)
                .then(|| (start.max(base) - base, stop.min(end) - base, perms[..3].to_owned()))
        })
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn segments_get_their_own_protections_and_relro_is_read_only() {
    let bytes = std::fs::read(sos("sample_standalone")).unwrap();
    let image = ElfImage::load(&bytes).unwrap();
    let plan = image.plan().clone();
    let maps = protections(image.base(), plan.image_size());
    let protection_at = |offset: u64| {
        maps.iter()
            .find(|(start, stop, _)| *start as u64 <= offset && offset < *stop as u64)
            .map(|(_, _, perms)| perms.clone())
            .unwrap_or_else(|| panic!("offset {offset:#x} unmapped: {maps:?}"))
    };
    let relro = plan.relro().expect("linked with -z relro");
    for segment in plan.segments() {
        let expected = segment.flags.to_string();
        let offset = segment.image_offset;
        let found = protection_at(offset);
        if relro.contains(&offset) {
            assert_eq!(found, "r--", "RELRO page of segment {segment:?}");
        } else {
            assert_eq!(found, expected, "segment {segment:?}");
        }
    }
    assert!(maps.iter().all(|(_, _, perms)| perms != "rwx"), "{maps:?}");
    let base = image.base();
    drop(image);
    assert!(protections(base, plan.image_size()).is_empty(), "the image is unmapped on drop");
}
