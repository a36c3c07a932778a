//! The import-cycle guard of docs/architecture.md ("Import cycles"): no two source
//! files of kafka-lite, mm2-checkpoint-core, mm2-checkpoint or xtask import each other,
//! directly or through others.
//!
//! The rule, precisely:
//!
//! - **Nodes** are the source files of each crate's module tree, read from its roots
//!   (`src/lib.rs`, `src/main.rs`) by following `mod` declarations (and `#[path]`).
//!   Test code is left out: a module or item under `#[cfg(test)]` (so `tests.rs`,
//!   `tests/` and `*_tests.rs` modules, and inline `mod tests { .. }`) is neither a node
//!   nor a source of edges; neither is an item under `#[cfg(doc)]` (an import for doc
//!   links) nor a doc comment. Every other `.rs` file under `src/` must be reached, so
//!   a file the walk missed fails the test instead of going unchecked.
//! - **An edge** A → B exists when code in A (a `use`, or a path in a type, an
//!   expression, a pattern or a macro's tokens) names an item defined in B, by a path
//!   that begins with `crate::`, `super::` or `self::`, or with a name in scope in A's
//!   module: a child module (`child::X`) or something A's module imports. A glob
//!   import (`use super::*`) names every item of its module's file.
//! - **Re-exports are seen through**: a path ending at a file that only re-exports the
//!   item (`pub use child::X`, `pub(crate) use ..`, or any other `use`, glob ones
//!   included) resolves to the file that defines it, so `use super::X` in a child of a
//!   `mod.rs` that re-exports `X` from a sibling is an edge to that sibling, not to
//!   `mod.rs`.
//! - **Declaring is not importing**: `mod child;` is no edge, and neither is a path
//!   that ends at a module (`use super::child;`); the items later named through it
//!   (`child::X`) are.
//! - A name a module does not define (an item made by a macro, such as
//!   config/keys.rs's keys) counts as defined in that module's file. Paths into other
//!   crates, directly or through a re-export (`pub use e2e::Cluster`), are not edges:
//!   cargo keeps crates acyclic already. `macro_rules!` macros
//!   are file-local in these crates and are not followed.
//!
//! The test fails naming every strongly connected set of files (each is one or more
//! cycles) with the references that bind it, except the sets in [`ALLOWED_CYCLES`];
//! it also fails when an allowed set no longer exists, so the list cannot go stale.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Cycles known and being broken, each the exact set of files (relative to the
/// workspace root) of one strongly connected set. Empty: every crate's files
/// import one way (docs/architecture.md, "Import cycles").
const ALLOWED_CYCLES: &[&[&str]] = &[];

/// The crates checked, by directory, with their module-tree roots.
const CRATES: &[(&str, &[&str])] = &[
    ("crates/kafka-lite", &["src/lib.rs"]),
    ("crates/mm2-checkpoint-core", &["src/lib.rs"]),
    ("crates/mm2-checkpoint", &["src/lib.rs", "src/main.rs"]),
    ("xtask", &["src/main.rs"]),
];

#[test]
fn no_import_cycles_between_source_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut graph = Graph::default();
    for (dir, roots) in CRATES {
        let mut tree = Tree::default();
        for r in *roots {
            tree.load_root(root, &Path::new(dir).join(r));
        }
        // Every source file is part of the walk: as a node, or as test code.
        let mut on_disk = Vec::new();
        rs_files(&root.join(dir).join("src"), &mut on_disk);
        for f in on_disk {
            let rel = f.strip_prefix(root).unwrap().to_path_buf();
            assert!(
                tree.files.contains(&rel) || tree.test_files.contains(&rel),
                "{} is not reached from {dir}'s roots by `mod` declarations; \
                 the import-cycle guard would not see it",
                rel.display()
            );
        }
        tree.add_edges(&mut graph);
    }
    assert!(
        graph.nodes.len() > 150,
        "too few source files read: {}",
        graph.nodes.len()
    );
    assert!(
        graph.edge_count() > 300,
        "too few imports seen: {}",
        graph.edge_count()
    );

    let cycles = strongly_connected(&graph.adjacency());
    let allowed: BTreeSet<BTreeSet<String>> = ALLOWED_CYCLES
        .iter()
        .map(|set| set.iter().map(|s| s.to_string()).collect())
        .collect();
    let mut report = String::new();
    for set in &cycles {
        let names: BTreeSet<String> = set.iter().map(|&i| graph.nodes[i].clone()).collect();
        if allowed.contains(&names) {
            continue;
        }
        writeln!(report, "import cycle among {} files:", names.len()).unwrap();
        for &a in set {
            for (&b, via) in &graph.edges[a] {
                if set.contains(&b) {
                    let via: Vec<&str> = via.iter().take(4).map(String::as_str).collect();
                    writeln!(
                        report,
                        "  {} -> {}  ({})",
                        graph.nodes[a],
                        graph.nodes[b],
                        via.join(", ")
                    )
                    .unwrap();
                }
            }
        }
    }
    let found: BTreeSet<BTreeSet<String>> = cycles
        .iter()
        .map(|set| set.iter().map(|&i| graph.nodes[i].clone()).collect())
        .collect();
    for set in allowed.difference(&found) {
        writeln!(
            report,
            "ALLOWED_CYCLES lists {set:?}, which is no longer a cycle: remove it from the list"
        )
        .unwrap();
    }
    assert!(
        report.is_empty(),
        "see docs/architecture.md (Import cycles)\n{report}"
    );
}

/// The cycle finder on a made-up graph: two cycles, a self-loop that is not one, and
/// files that only point into cycles.
#[test]
fn strongly_connected_finds_each_cycle_once() {
    // 0 -> 1 -> 2 -> 0, 3 -> 0, 3 -> 4 -> 5 -> 4, 6 -> 6
    let adjacency = vec![
        vec![1],
        vec![2],
        vec![0],
        vec![0, 4],
        vec![5],
        vec![4],
        vec![6],
    ];
    let mut sets = strongly_connected(&adjacency);
    sets.sort();
    assert_eq!(sets, vec![vec![0, 1, 2], vec![4, 5]]);
    assert!(strongly_connected(&[vec![1], vec![2], vec![]]).is_empty());
}

/// A re-export is seen through (to another crate: no edge); declaring a module and
/// naming a module are not edges.
#[test]
fn edges_follow_re_exports_and_skip_declarations() {
    let mut tree = Tree::default();
    let files = [
        ("lib.rs", "mod a; mod m; use m::Thing; pub fn top() {}"),
        (
            "a.rs",
            "use crate::m; pub fn f() -> m::Other { crate::top(); loop {} }",
        ),
        (
            "m/mod.rs",
            "mod inner; mod other; pub use inner::Thing; pub use other::*; pub use std::fmt::Write as W;",
        ),
        (
            "m/inner.rs",
            "pub struct Thing; fn g(_: &dyn super::W) { let _ = super::Other; }",
        ),
        (
            "m/other.rs",
            "pub struct Other; #[cfg(test)] mod tests { use super::super::Thing; }",
        ),
    ];
    let map: BTreeMap<&str, &str> = files.into_iter().collect();
    tree.load_from(PathBuf::from("lib.rs"), &|p: &Path| {
        map.get(p.to_str().unwrap()).map(|s| s.to_string())
    });
    let mut graph = Graph::default();
    tree.add_edges(&mut graph);
    let mut edges = BTreeSet::new();
    for (a, to) in graph.edges.iter().enumerate() {
        for b in to.keys() {
            edges.insert(format!("{} -> {}", graph.nodes[a], graph.nodes[*b]));
        }
    }
    let want: BTreeSet<String> = [
        "lib.rs -> m/inner.rs",
        "a.rs -> m/other.rs",
        "a.rs -> lib.rs",
        "m/inner.rs -> m/other.rs",
        "m/mod.rs -> m/inner.rs",
        "m/mod.rs -> m/other.rs",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(edges, want);
}

/// The file-level graph: nodes by path, edges with the paths that make them.
#[derive(Default)]
struct Graph {
    nodes: Vec<String>,
    index: BTreeMap<String, usize>,
    edges: Vec<BTreeMap<usize, BTreeSet<String>>>,
}

impl Graph {
    fn node(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.nodes.push(name.to_string());
        self.edges.push(BTreeMap::new());
        self.index.insert(name.to_string(), self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn edge_count(&self) -> usize {
        self.edges.iter().map(BTreeMap::len).sum()
    }

    fn adjacency(&self) -> Vec<Vec<usize>> {
        self.edges
            .iter()
            .map(|e| e.keys().copied().collect())
            .collect()
    }
}

/// Tarjan's strongly connected components, keeping those of two or more nodes (each
/// holds at least one cycle), each sorted.
fn strongly_connected(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adjacency: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        sets: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.adjacency[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut set = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort_unstable();
                s.sets.push(set);
            }
        }
    }
    let n = adjacency.len();
    let mut s = State {
        adjacency,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        sets: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.sets
}

/// One module: inline modules share their file's node.
struct Module {
    file: usize,
    parent: Option<usize>,
    root: usize,
    children: BTreeMap<String, usize>,
    /// Names of items defined here (not modules, not imports).
    items: BTreeSet<String>,
    /// Module-level imports: the name brought in, and the path it names.
    imports: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// Imports inside function bodies: in scope for this module's own paths only.
    local_imports: BTreeMap<String, Vec<String>>,
    /// Every path this module's code names.
    refs: Vec<Vec<String>>,
}

/// What a path names.
#[derive(Clone, Copy)]
enum Target {
    Module(usize),
    Item {
        file: usize,
    },
    /// Another crate's item, brought in by a `use`.
    External,
}

/// The module trees of one crate (its library and binary roots).
#[derive(Default)]
struct Tree {
    files: Vec<PathBuf>,
    test_files: BTreeSet<PathBuf>,
    modules: Vec<Module>,
}

impl Tree {
    fn load_root(&mut self, workspace: &Path, root: &Path) {
        self.load_from(root.to_path_buf(), &|p: &Path| {
            std::fs::read_to_string(workspace.join(p)).ok()
        });
    }

    /// Reads the tree at `root`, with `read` giving a file's text by its path.
    fn load_from(&mut self, root: PathBuf, read: &dyn Fn(&Path) -> Option<String>) {
        let file = self.files.len();
        self.files.push(root.clone());
        let m = self.new_module(file, None);
        let dir = root.parent().unwrap().to_path_buf();
        let ast = parse(&root, read);
        self.load_items(m, &ast.items, &dir, &dir, read);
    }

    fn new_module(&mut self, file: usize, parent: Option<usize>) -> usize {
        let id = self.modules.len();
        let root = parent.map_or(id, |p| self.modules[p].root);
        self.modules.push(Module {
            file,
            parent,
            root,
            children: BTreeMap::new(),
            items: BTreeSet::new(),
            imports: BTreeMap::new(),
            globs: Vec::new(),
            local_imports: BTreeMap::new(),
            refs: Vec::new(),
        });
        id
    }

    /// Loads module `m`'s items: `children` is where its `mod x;` files live, `here`
    /// the directory of the file that holds them (for `#[path]`).
    fn load_items(
        &mut self,
        m: usize,
        items: &[syn::Item],
        children: &Path,
        here: &Path,
        read: &dyn Fn(&Path) -> Option<String>,
    ) {
        for item in items {
            if is_test(item_attrs(item)) {
                if let syn::Item::Mod(module) = item {
                    self.load_test_module(module, children, here, read);
                }
                continue;
            }
            match item {
                syn::Item::Mod(module) => {
                    let name = module.ident.to_string();
                    if let Some((_, inner)) = &module.content {
                        let file = self.modules[m].file;
                        let child = self.new_module(file, Some(m));
                        self.modules[m].children.insert(name.clone(), child);
                        self.load_items(child, inner, &children.join(&name), here, read);
                    } else {
                        let path = module_file(module, children, here, read);
                        let file = self.files.len();
                        self.files.push(path.clone());
                        let child = self.new_module(file, Some(m));
                        self.modules[m].children.insert(name.clone(), child);
                        let ast = parse(&path, read);
                        let dir = path.parent().unwrap().to_path_buf();
                        let grandchildren = if path.file_name().unwrap() == "mod.rs" {
                            dir.clone()
                        } else {
                            dir.join(&name)
                        };
                        self.load_items(child, &ast.items, &grandchildren, &dir, read);
                    }
                }
                syn::Item::Use(u) => {
                    let mut uses = Vec::new();
                    flatten_use(&u.tree, &mut Vec::new(), &mut uses);
                    for (name, path) in uses {
                        match name {
                            Some(name) => {
                                self.modules[m].refs.push(path.clone());
                                self.modules[m].imports.insert(name, path);
                            }
                            None => {
                                // A glob names every item of its module.
                                let mut all = path.clone();
                                all.push("*".to_string());
                                self.modules[m].refs.push(all);
                                self.modules[m].globs.push(path);
                            }
                        }
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[m].items.insert(name);
                    }
                    let mut refs = Refs::default();
                    refs.visit_item(other);
                    let module = &mut self.modules[m];
                    module.refs.extend(refs.paths);
                    for (name, mut path) in refs.uses {
                        match name {
                            Some(name) => {
                                module.refs.push(path.clone());
                                module.local_imports.insert(name, path);
                            }
                            None => {
                                path.push("*".to_string());
                                module.refs.push(path);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Marks a `#[cfg(test)]` module's files as test code, so they are known but not
    /// nodes.
    fn load_test_module(
        &mut self,
        module: &syn::ItemMod,
        children: &Path,
        here: &Path,
        read: &dyn Fn(&Path) -> Option<String>,
    ) {
        let name = module.ident.to_string();
        let parsed;
        let (items, children, here) = match &module.content {
            Some((_, items)) => (items, children.join(&name), here.to_path_buf()),
            None => {
                let path = module_file(module, children, here, read);
                parsed = parse(&path, read);
                self.test_files.insert(path.clone());
                let dir = path.parent().unwrap().to_path_buf();
                let sub = if path.file_name().unwrap() == "mod.rs" {
                    dir.clone()
                } else {
                    dir.join(&name)
                };
                (&parsed.items, sub, dir)
            }
        };
        for item in items {
            if let syn::Item::Mod(inner) = item {
                self.load_test_module(inner, &children, &here, read);
            }
        }
    }

    /// What `path`, named in module `m`, refers to: `None` for another crate's.
    fn resolve(&self, m: usize, path: &[String], local: bool, depth: usize) -> Option<Target> {
        if depth > 32 {
            return None;
        }
        let (first, rest) = path.split_first()?;
        let mut at = match first.as_str() {
            "crate" | "$crate" => Target::Module(self.modules[m].root),
            "self" => Target::Module(m),
            "super" => Target::Module(self.modules[m].parent?),
            name => self.lookup(m, name, !rest.is_empty(), local, depth)?,
        };
        for (i, segment) in rest.iter().enumerate() {
            let Target::Module(cur) = at else { break };
            at = match segment.as_str() {
                "super" => Target::Module(self.modules[cur].parent?),
                "self" => Target::Module(cur),
                "*" => Target::Item {
                    file: self.modules[cur].file,
                },
                // A name the module does not define by an item it declares (made by
                // a macro, say) is taken to be its own.
                name => self
                    .lookup(cur, name, i + 1 < rest.len(), false, depth)
                    .unwrap_or(Target::Item {
                        file: self.modules[cur].file,
                    }),
            };
        }
        Some(at)
    }

    /// A name in module `m`'s scope. `more`: the path goes on, so a module is wanted
    /// before an item of the same name; `local`: imports in function bodies count.
    fn lookup(
        &self,
        m: usize,
        name: &str,
        more: bool,
        local: bool,
        depth: usize,
    ) -> Option<Target> {
        let module = &self.modules[m];
        let child = module.children.get(name).map(|&c| Target::Module(c));
        let item = module
            .items
            .contains(name)
            .then_some(Target::Item { file: module.file });
        let found = if more { child.or(item) } else { item.or(child) };
        if found.is_some() {
            return found;
        }
        let import = module
            .imports
            .get(name)
            .or_else(|| local.then(|| module.local_imports.get(name)).flatten());
        if let Some(path) = import {
            // An import resolves where it is written; an unresolved one is another
            // crate's name.
            return Some(
                self.resolve(m, path, false, depth + 1)
                    .unwrap_or(Target::External),
            );
        }
        for glob in &module.globs {
            if let Some(Target::Module(g)) = self.resolve(m, glob, false, depth + 1)
                && g != m
                && let Some(t) = self.lookup(g, name, more, false, depth + 1)
            {
                return Some(t);
            }
        }
        None
    }

    fn add_edges(&self, graph: &mut Graph) {
        for (m, module) in self.modules.iter().enumerate() {
            let from = graph.node(&slash(&self.files[module.file]));
            for path in &module.refs {
                if let Some(Target::Item { file }) = self.resolve(m, path, true, 0)
                    && file != module.file
                {
                    let to = graph.node(&slash(&self.files[file]));
                    graph.edges[from]
                        .entry(to)
                        .or_default()
                        .insert(path.join("::"));
                }
            }
        }
    }
}

fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

fn parse(path: &Path, read: &dyn Fn(&Path) -> Option<String>) -> syn::File {
    let text = read(path).unwrap_or_else(|| panic!("cannot read {}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {}: {e}", path.display()))
}

/// The file of `mod x;`: its `#[path]` (relative to the declaring file's directory),
/// else `x.rs` or `x/mod.rs` under the module's directory.
fn module_file(
    module: &syn::ItemMod,
    children: &Path,
    here: &Path,
    read: &dyn Fn(&Path) -> Option<String>,
) -> PathBuf {
    for attr in &module.attrs {
        if attr.path().is_ident("path")
            && let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            return normalise(&here.join(s.value()));
        }
    }
    let name = module.ident.to_string();
    let flat = children.join(format!("{name}.rs"));
    if read(&flat).is_some() {
        flat
    } else {
        children.join(&name).join("mod.rs")
    }
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `#[cfg(test)]` or `#[cfg(doc)]` (imports for doc links only), or a `cfg(all(..))`
/// that requires `test`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if !attr.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = attr.meta.require_list() else {
            return false;
        };
        let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
        match tokens.as_slice() {
            [TokenTree::Ident(i)] => i == "test" || i == "doc",
            [TokenTree::Ident(all), TokenTree::Group(g)] if all == "all" => g
                .stream()
                .into_iter()
                .any(|t| matches!(t, TokenTree::Ident(i) if i == "test")),
            _ => false,
        }
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    use syn::Item::*;
    let ident = match item {
        Const(i) => &i.ident,
        Enum(i) => &i.ident,
        Fn(i) => &i.sig.ident,
        Macro(i) => i.ident.as_ref()?,
        Static(i) => &i.ident,
        Struct(i) => &i.ident,
        Trait(i) => &i.ident,
        TraitAlias(i) => &i.ident,
        Type(i) => &i.ident,
        Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// A `use` tree as (name brought in, full path) pairs; `None` for a glob.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    out.push((Some(last.clone()), prefix.clone()));
                }
            } else {
                let mut path = prefix.clone();
                path.push(name.clone());
                out.push((Some(name), path));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            let name = r.rename.to_string();
            out.push((Some(name), path));
        }
        syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// The paths one item names, outside its test-only parts.
#[derive(Default)]
struct Refs {
    paths: Vec<Vec<String>>,
    uses: Vec<(Option<String>, Vec<String>)>,
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        flatten_use(&u.tree, &mut Vec::new(), &mut self.uses);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Attributes name macros and cfg keys, not items of the crate.
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        token_paths(mac.tokens.clone(), &mut self.paths);
    }
}

/// Paths in a macro's tokens: `a::b::c` runs not preceded by `::` or `.`.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => token_paths(g.stream(), out),
            TokenTree::Ident(ident) => {
                let after_colons_or_dot = i > 0
                    && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':' || p.as_char() == '.');
                let dollar =
                    i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                if !after_colons_or_dot {
                    let mut path = vec![if dollar {
                        format!("${ident}")
                    } else {
                        ident.to_string()
                    }];
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        path.push(next.to_string());
                        i += 3;
                    }
                    if path.len() > 1 {
                        out.push(path);
                    }
                }
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
        i += 1;
    }
}
