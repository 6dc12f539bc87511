// A module and a function whose names are not UTF-8 (the byte 0xFF):
// IREE takes any bytes, prints them as they are (`EXEC @dbl\xFF`), and so
// must `xplug run` (crates/cli/tests/run_parity.rs).
module @"names\FF" {
  func.func @"dbl\FF"(%arg0: i32) -> i32 {
    %0 = arith.addi %arg0, %arg0 : i32
    return %0 : i32
  }
}
