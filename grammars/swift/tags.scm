; Swift tags: definitions and references (tree-sitter-swift 0.7.4).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; `class`, `struct`, `enum`, `actor` and `extension` are all `class_declaration`s told apart by
; their `declaration_kind`. An extension is an impl named by the type it extends. Functions
; directly in a type, extension or protocol become methods in the extractor.

; ---------------------------------------------------------------------------------------------
; Types.
; ---------------------------------------------------------------------------------------------

(class_declaration
  declaration_kind: [
    "class"
    "actor"
  ]
  name: (type_identifier) @name) @definition.class

(class_declaration
  declaration_kind: "struct"
  name: (type_identifier) @name) @definition.struct

(class_declaration
  declaration_kind: "enum"
  name: (type_identifier) @name) @definition.enum

; `extension MemoryStorage: CustomStringConvertible` -> impl `MemoryStorage`; for
; `extension Outer.Inner` the last name.
(class_declaration
  declaration_kind: "extension"
  name: (user_type
    (type_identifier) @name .)) @definition.impl

(protocol_declaration
  name: (type_identifier) @name) @definition.protocol

(typealias_declaration
  name: (type_identifier) @name) @definition.type

; Enum cases: `case never`, `case seconds(TimeInterval)`; `case a, b` is one definition per name.
(enum_entry
  name: (simple_identifier) @name) @definition.constant

; ---------------------------------------------------------------------------------------------
; Functions, initialisers and deinitialisers (`init` and `deinit` are methods of those names).
; ---------------------------------------------------------------------------------------------

(function_declaration
  name: (simple_identifier) @name) @definition.function

(protocol_function_declaration
  name: (simple_identifier) @name) @definition.method

(init_declaration
  name: "init" @name) @definition.method

(deinit_declaration
  "deinit" @name) @definition.method

; `subscript(index: Int) -> Element { ... }`: a method named by its keyword, as `init` is.
(subscript_declaration
  "subscript" @name) @definition.method

; ---------------------------------------------------------------------------------------------
; Properties: top-level `let` is a constant and `var` a variable; stored and computed properties
; of a type, extension or protocol are fields. Locals are not definitions.
; ---------------------------------------------------------------------------------------------

(source_file
  (property_declaration
    (value_binding_pattern
      mutability: "let")
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.constant)

(source_file
  (property_declaration
    (value_binding_pattern
      mutability: "var")
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.variable)

(class_body
  (property_declaration
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.field)

(enum_class_body
  (property_declaration
    name: (pattern
      bound_identifier: (simple_identifier) @name)) @definition.field)

(protocol_property_declaration
  name: (pattern
    bound_identifier: (simple_identifier) @name)) @definition.field

; ---------------------------------------------------------------------------------------------
; Imports: `import Foundation` -> `Foundation`; `import struct Foo.Bar` -> `Foo.Bar`.
; ---------------------------------------------------------------------------------------------

(import_declaration
  (identifier) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: `makeDefaultStorage()`, `run { }` and initialiser calls `Box(x)` are calls; `a.b()` and
; `Type.make()` are method calls. Subscripts (`cache[key]`) parse as calls with `[` arguments and
; are not captured; neither is `defer { }`, which this grammar parses as a call.
; ---------------------------------------------------------------------------------------------

(call_expression
  .
  (simple_identifier) @name
  .
  (call_suffix
    [
      (value_arguments
        .
        "(")
      (lambda_literal)
    ])
  (#not-eq? @name "defer")) @reference.call

(call_expression
  .
  (navigation_expression
    suffix: (navigation_suffix
      suffix: (simple_identifier) @name))
  .
  (call_suffix
    [
      (value_arguments
        .
        "(")
      (lambda_literal)
    ])) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Type references: every written type (annotations, returns, generic arguments, conformances,
; extended types); each part of `A.B`. Standard scalar types are skipped.
; ---------------------------------------------------------------------------------------------

(user_type
  (type_identifier) @name
  (#not-any-of? @name "Int" "Int8" "Int16" "Int32" "Int64" "UInt" "UInt8" "UInt16" "UInt32" "UInt64" "Bool" "String" "Character" "Double" "Float" "Void" "Any" "AnyObject" "Self")) @reference.type

; Comments, for reading a definition with the docs above it: `///`, `//`, `/** */`, `/* */`.
[
  (comment)
  (multiline_comment)
] @comment
