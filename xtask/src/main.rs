//! Developer and CI tasks. Run `cargo xtask help`.

fn main() {
    println!("usage: cargo xtask <kafka up|down|status|test>");
}
