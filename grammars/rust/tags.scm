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
; Type references: a type named in a type position. Every position that can hold a type is listed
; (so a definition's own name, an impl's implementing type and generic parameter declarations are
; never captured). Generic and path types are reached through the nested positions too:
; `&Vec<io::Result<Foo>>` gives `Vec`, `Result`, `Foo`. `Self` is skipped.
; ---------------------------------------------------------------------------------------------

([
  (array_type element: (type_identifier) @name)
  (array_type element: (generic_type type: (type_identifier) @name))
  (array_type element: (scoped_type_identifier name: (type_identifier) @name))
  (array_type element: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (bounded_type (type_identifier) @name)
  (bounded_type (generic_type type: (type_identifier) @name))
  (bounded_type (scoped_type_identifier name: (type_identifier) @name))
  (bounded_type (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (closure_expression return_type: (type_identifier) @name)
  (closure_expression return_type: (generic_type type: (type_identifier) @name))
  (closure_expression return_type: (scoped_type_identifier name: (type_identifier) @name))
  (closure_expression return_type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (const_item type: (type_identifier) @name)
  (const_item type: (generic_type type: (type_identifier) @name))
  (const_item type: (scoped_type_identifier name: (type_identifier) @name))
  (const_item type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (const_parameter type: (type_identifier) @name)
  (const_parameter type: (scoped_type_identifier name: (type_identifier) @name))

  (field_declaration type: (type_identifier) @name)
  (field_declaration type: (generic_type type: (type_identifier) @name))
  (field_declaration type: (scoped_type_identifier name: (type_identifier) @name))
  (field_declaration type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (function_item return_type: (type_identifier) @name)
  (function_item return_type: (generic_type type: (type_identifier) @name))
  (function_item return_type: (scoped_type_identifier name: (type_identifier) @name))
  (function_item return_type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (function_signature_item return_type: (type_identifier) @name)
  (function_signature_item return_type: (generic_type type: (type_identifier) @name))
  (function_signature_item return_type: (scoped_type_identifier name: (type_identifier) @name))
  (function_signature_item return_type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (function_type trait: (type_identifier) @name)
  (function_type return_type: (type_identifier) @name)
  (function_type return_type: (generic_type type: (type_identifier) @name))
  (function_type return_type: (scoped_type_identifier name: (type_identifier) @name))
  (function_type return_type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (higher_ranked_trait_bound type: (type_identifier) @name)
  (higher_ranked_trait_bound type: (generic_type type: (type_identifier) @name))
  (higher_ranked_trait_bound type: (scoped_type_identifier name: (type_identifier) @name))

  ; The trait of `impl Trait for Type` (the type itself names the impl definition).
  (impl_item trait: (type_identifier) @name)
  (impl_item trait: (generic_type type: (type_identifier) @name))
  (impl_item trait: (scoped_type_identifier name: (type_identifier) @name))
  (impl_item trait: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (let_declaration type: (type_identifier) @name)
  (let_declaration type: (generic_type type: (type_identifier) @name))
  (let_declaration type: (scoped_type_identifier name: (type_identifier) @name))
  (let_declaration type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (ordered_field_declaration_list type: (type_identifier) @name)
  (ordered_field_declaration_list type: (generic_type type: (type_identifier) @name))
  (ordered_field_declaration_list type: (scoped_type_identifier name: (type_identifier) @name))
  (ordered_field_declaration_list type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (parameter type: (type_identifier) @name)
  (parameter type: (generic_type type: (type_identifier) @name))
  (parameter type: (scoped_type_identifier name: (type_identifier) @name))
  (parameter type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  ; Parameter types of `fn(A) -> B` pointer types.
  (parameters (type_identifier) @name)
  (parameters (generic_type type: (type_identifier) @name))
  (parameters (scoped_type_identifier name: (type_identifier) @name))

  (pointer_type type: (type_identifier) @name)
  (pointer_type type: (generic_type type: (type_identifier) @name))
  (pointer_type type: (scoped_type_identifier name: (type_identifier) @name))

  (qualified_type type: (type_identifier) @name)
  (qualified_type alias: (type_identifier) @name)
  (qualified_type alias: (generic_type type: (type_identifier) @name))
  (qualified_type alias: (scoped_type_identifier name: (type_identifier) @name))

  (reference_type type: (type_identifier) @name)
  (reference_type type: (generic_type type: (type_identifier) @name))
  (reference_type type: (scoped_type_identifier name: (type_identifier) @name))
  (reference_type type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (removed_trait_bound (type_identifier) @name)

  (static_item type: (type_identifier) @name)
  (static_item type: (generic_type type: (type_identifier) @name))
  (static_item type: (scoped_type_identifier name: (type_identifier) @name))
  (static_item type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (trait_bounds (type_identifier) @name)
  (trait_bounds (generic_type type: (type_identifier) @name))
  (trait_bounds (scoped_type_identifier name: (type_identifier) @name))
  (trait_bounds (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (tuple_type (type_identifier) @name)
  (tuple_type (generic_type type: (type_identifier) @name))
  (tuple_type (scoped_type_identifier name: (type_identifier) @name))
  (tuple_type (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (type_arguments (type_identifier) @name)
  (type_arguments (generic_type type: (type_identifier) @name))
  (type_arguments (scoped_type_identifier name: (type_identifier) @name))
  (type_arguments (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  ; `Iterator<Item = Foo>`.
  (type_binding type: (type_identifier) @name)
  (type_binding type: (generic_type type: (type_identifier) @name))
  (type_binding type: (scoped_type_identifier name: (type_identifier) @name))

  (type_cast_expression type: (type_identifier) @name)
  (type_cast_expression type: (scoped_type_identifier name: (type_identifier) @name))

  (type_item type: (type_identifier) @name)
  (type_item type: (generic_type type: (type_identifier) @name))
  (type_item type: (scoped_type_identifier name: (type_identifier) @name))
  (type_item type: (generic_type type: (scoped_type_identifier name: (type_identifier) @name)))

  (type_parameter default_type: (type_identifier) @name)
  (type_parameter default_type: (generic_type type: (type_identifier) @name))

  ; `impl Trait` and `dyn Trait`.
  (abstract_type trait: (type_identifier) @name)
  (abstract_type trait: (generic_type type: (type_identifier) @name))
  (abstract_type trait: (scoped_type_identifier name: (type_identifier) @name))
  (dynamic_type trait: (type_identifier) @name)
  (dynamic_type trait: (generic_type type: (type_identifier) @name))
  (dynamic_type trait: (scoped_type_identifier name: (type_identifier) @name))

  ; `where T: Bound` names `T`; the bounds are trait_bounds above.
  (where_predicate left: (type_identifier) @name)

  ; Struct literals and patterns: `Foo { .. }`, `a::Foo { .. }`.
  (struct_expression name: (type_identifier) @name)
  (struct_expression name: (scoped_type_identifier name: (type_identifier) @name))
  (struct_pattern type: (type_identifier) @name)
  (struct_pattern type: (scoped_type_identifier name: (type_identifier) @name))
] @reference.type
  (#not-any-of? @name "Self" "_"))

; Derived traits: `#[derive(Debug, Clone)]` -> type references to `Debug` and `Clone`.
((attribute
  (identifier) @_attribute
  arguments: (token_tree
    (identifier) @name)) @reference.type
  (#eq? @_attribute "derive"))
