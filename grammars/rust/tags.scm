; Rust tags: definitions and references (tree-sitter-rust 0.24).
;
; Convention (see server/index/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Functions directly inside an impl or trait become methods in the extractor, so every fn is
; captured as a function here.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(function_item
  name: (identifier) @name) @definition.function

; `fn f();` in traits and extern blocks.
(function_signature_item
  name: (identifier) @name) @definition.function

(struct_item
  name: (type_identifier) @name) @definition.struct

(union_item
  name: (type_identifier) @name) @definition.struct

(enum_item
  name: (type_identifier) @name) @definition.enum

(trait_item
  name: (type_identifier) @name) @definition.trait

; An impl is named by its implementing type: `impl<T> Display for Wrapper<T>` -> `Wrapper`.
; Impls for references, tuples, slices and the like have no single name and are not captured.
(impl_item
  type: [
    (type_identifier) @name
    (primitive_type) @name
    (scoped_type_identifier
      name: (type_identifier) @name)
    (generic_type
      type: [
        (type_identifier) @name
        (scoped_type_identifier
          name: (type_identifier) @name)
      ])
  ]) @definition.impl

(mod_item
  name: (identifier) @name) @definition.module

(const_item
  name: (identifier) @name) @definition.constant

(static_item
  name: (identifier) @name) @definition.static

(type_item
  name: (type_identifier) @name) @definition.type

; `type Output;` in a trait.
(associated_type
  name: (type_identifier) @name) @definition.type

(macro_definition
  name: (identifier) @name) @definition.macro

; Named struct and union fields (tuple-struct fields have no name).
(field_declaration
  name: (field_identifier) @name) @definition.field

; ---------------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------------

; `f()`, `a::b::c()` -> `c`, `f::<T>()`, `a::f::<T>()`.
(call_expression
  function: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
    (generic_function
      function: [
        (identifier) @name
        (scoped_identifier
          name: (identifier) @name)
      ])
  ]) @reference.call

; `x.foo()`, `x.parse::<u32>()`.
(call_expression
  function: [
    (field_expression
      field: (field_identifier) @name)
    (generic_function
      function: (field_expression
        field: (field_identifier) @name))
  ]) @reference.method_call

; The type in an associated-function call: `Engine::open()`, `index::Index::default()` -> type
; reference to `Engine` / `Index`. Only capitalised path segments (types, by convention), not
; modules; `Self` is skipped.
((call_expression
  function: (scoped_identifier
    path: [
      (identifier) @name
      (scoped_identifier
        name: (identifier) @name)
    ])) @reference.type
  (#match? @name "^[A-Z]")
  (#not-any-of? @name "Self" "_"))

; ---------------------------------------------------------------------------------------------
; Macros
; ---------------------------------------------------------------------------------------------

; `println!(..)` -> `println`, `log::info!(..)` -> `info`.
(macro_invocation
  macro: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.macro

; ---------------------------------------------------------------------------------------------
; Imports: the imported item's own name (`use a::b::{C, D as E}` -> `C`, `D`).
; ---------------------------------------------------------------------------------------------

(use_declaration
  argument: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.import

(use_list
  [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.import

(use_as_clause
  path: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.import

; `use std::fmt::{self, Display}` imports the module `fmt` itself.
(scoped_use_list
  path: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]
  list: (use_list
    (self))) @reference.import

(extern_crate_declaration
  name: (identifier) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Type references: every type name is a reference to that type, except where it declares one.
; A name that a definition above captures (a struct's own name, an impl's implementing type) is
; dropped by the extractor; so is one captured as `@not_a_reference` (generic parameters, the
; name in `Item = Foo`). Reached at any depth: `&Vec<io::Result<Foo>>` gives `Vec`, `Result`,
; `Foo`. `Self` is skipped. One pattern instead of one per type position: the per-position list
; took ~120 ms to compile and made every node of every tree cost more to match.
; ---------------------------------------------------------------------------------------------

(((type_identifier) @name) @reference.type
  (#not-any-of? @name "Self" "_"))

(type_parameter
  name: (type_identifier) @not_a_reference)

(type_binding
  name: (type_identifier) @not_a_reference)

(use_bounds
  (type_identifier) @not_a_reference)

; Derived traits: `#[derive(Debug, Clone)]` -> type references to `Debug` and `Clone`.
((attribute
  (identifier) @_attribute
  arguments: (token_tree
    (identifier) @name)) @reference.type
  (#eq? @_attribute "derive"))

; Comments, for reading a definition with the docs above it (`@comment` on each whole comment
; node).
(line_comment) @comment
(block_comment) @comment
