; Kotlin tags: definitions and references (tree-sitter-kotlin-ng 1.1.0).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; `class`, `interface`, `enum class` and `data class` are all `class_declaration`s, told apart by
; their keyword and modifiers. Functions directly in a class, object or interface become methods
; in the extractor.

; ---------------------------------------------------------------------------------------------
; The package encloses the rest of the file.
; ---------------------------------------------------------------------------------------------

(package_header
  (qualified_identifier) @name) @definition.module @scope.file

; ---------------------------------------------------------------------------------------------
; Types.
; ---------------------------------------------------------------------------------------------

(class_declaration
  "interface"
  name: (identifier) @name) @definition.interface

; A class without modifiers, or whose modifiers are not `data` or `enum` (`inner`, `sealed`,
; `abstract`, annotations).
(class_declaration
  .
  "class"
  name: (identifier) @name) @definition.class

(class_declaration
  (modifiers) @_modifiers
  "class"
  name: (identifier) @name
  (#not-match? @_modifiers "(^|\\s)(data|enum)(\\s|$)")) @definition.class

(class_declaration
  (modifiers
    (class_modifier) @_modifier)
  name: (identifier) @name
  (#eq? @_modifier "data")) @definition.record

(class_declaration
  (modifiers
    (class_modifier) @_modifier)
  name: (identifier) @name
  (#eq? @_modifier "enum")) @definition.enum

(enum_entry
  (identifier) @name) @definition.constant

; `object Downloads`, `companion object Factory`: singletons hold methods like classes. An unnamed
; companion object is no definition; its members belong to the class around it.
(object_declaration
  name: (identifier) @name) @definition.class

(companion_object
  name: (identifier) @name) @definition.class

(type_alias
  type: (identifier) @name) @definition.type

; ---------------------------------------------------------------------------------------------
; Functions and constructors. `constructor(...)` is a method named `constructor`.
; ---------------------------------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(secondary_constructor
  "constructor" @name) @definition.method

; ---------------------------------------------------------------------------------------------
; Properties: `const val` is a constant; other top-level properties are variables; properties in
; a class body and `val`/`var` parameters of a primary constructor are fields. Local `val`s are
; not definitions.
; ---------------------------------------------------------------------------------------------

(property_declaration
  (modifiers
    (property_modifier) @_modifier)
  (variable_declaration
    (identifier) @name)
  (#eq? @_modifier "const")) @definition.constant

(source_file
  (property_declaration
    .
    (variable_declaration
      (identifier) @name)) @definition.variable)

(source_file
  (property_declaration
    (modifiers) @_modifiers
    (variable_declaration
      (identifier) @name)
    (#not-match? @_modifiers "(^|\\s)const(\\s|$)")) @definition.variable)

(class_body
  (property_declaration
    .
    (variable_declaration
      (identifier) @name)) @definition.field)

(class_body
  (property_declaration
    (modifiers) @_modifiers
    (variable_declaration
      (identifier) @name)
    (#not-match? @_modifiers "(^|\\s)const(\\s|$)")) @definition.field)

(class_parameter
  [
    "val"
    "var"
  ]
  .
  (identifier) @name) @definition.field

; ---------------------------------------------------------------------------------------------
; Imports: `import java.util.ArrayDeque` -> `ArrayDeque`; `import a.B as C` -> `B`.
; ---------------------------------------------------------------------------------------------

(import
  (qualified_identifier
    (identifier) @name .)) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: `fetch(x)` and constructor calls `Stats()` are calls; `a.b()`, `a?.b()` and calls with
; only a trailing lambda (`list.forEach { }`) are method calls.
; ---------------------------------------------------------------------------------------------

(call_expression
  .
  (identifier) @name) @reference.call

(call_expression
  .
  (navigation_expression
    (identifier) @name .)) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Type references: every written type (parameters, returns, properties, supertypes, type
; arguments); for `a.B` the last name. Built-in scalar types are skipped.
; ---------------------------------------------------------------------------------------------

(user_type
  (identifier) @name .
  (#not-any-of? @name "Int" "Long" "Short" "Byte" "Boolean" "Char" "Float" "Double" "String" "Unit" "Any" "Nothing")) @reference.type

; Comments, for reading a definition with the docs above it: KDoc `/** */`, `/* */`, `//`.
[
  (line_comment)
  (block_comment)
] @comment
