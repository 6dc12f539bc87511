//! Lists the static plugins, loads `sample_static` and calls its import.

// The one line that keeps the plugin's static registration in the binary.
use sample_static as _;

fn main() -> std::process::ExitCode {
    println!("static plugins: {:?}", static_runtime::static_plugin_names());
    match static_runtime::fma_through_static_plugin("sample_static", 6, 7, 8) {
        Ok(result) => {
            println!("static_fma_i64(6, 7, 8) = {result}");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
