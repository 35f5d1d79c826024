; Java tags: definitions and references (tree-sitter-java 0.23.5).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Modifiers and annotations are children of the declaration they annotate, so a definition's node
; starts at its first annotation.

; ---------------------------------------------------------------------------------------------
; Package: encloses the rest of the file, so every class and method is scoped by it.
; ---------------------------------------------------------------------------------------------

(package_declaration
  [
    (identifier) @name
    (scoped_identifier) @name
  ]) @definition.module @scope.file

; ---------------------------------------------------------------------------------------------
; Types
; ---------------------------------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

; `@interface Name { ... }`: an annotation type is an interface.
(annotation_type_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.enum

(record_declaration
  name: (identifier) @name) @definition.record

; ---------------------------------------------------------------------------------------------
; Members
; ---------------------------------------------------------------------------------------------

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

; `record R(int a) { R { ... } }`: the canonical constructor without its parameter list.
(compact_constructor_declaration
  name: (identifier) @name) @definition.method

; `String value() default "";` in an annotation type.
(annotation_type_element_declaration
  name: (identifier) @name) @definition.method

; `static final` fields are constants, every other field is a field. A field without modifiers
; has its type as its first child.
((field_declaration
  (modifiers) @_modifiers
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.constant
  (#match? @_modifiers "\\bstatic\\b[\\s\\S]*\\bfinal\\b|\\bfinal\\b[\\s\\S]*\\bstatic\\b"))

((field_declaration
  (modifiers) @_modifiers
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.field
  (#not-match? @_modifiers "\\bstatic\\b[\\s\\S]*\\bfinal\\b|\\bfinal\\b[\\s\\S]*\\bstatic\\b"))

(field_declaration
  .
  type: (_)
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.field

; Interface fields are implicitly `static final`.
(constant_declaration
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.constant

; Enum constants are the enum's `static final` instances.
(enum_constant
  name: (identifier) @name) @definition.constant

; A record's components are its fields.
(record_declaration
  parameters: (formal_parameters
    (formal_parameter
      name: (identifier) @name) @definition.field))

; ---------------------------------------------------------------------------------------------
; Calls
; ---------------------------------------------------------------------------------------------

; `f(x)`: a method of this class or a static import.
(method_invocation
  !object
  name: (identifier) @name) @reference.call

; `x.f()`, `Objects.requireNonNull(x)`, `super.f()`.
(method_invocation
  object: (_)
  name: (identifier) @name) @reference.method_call

; `new Foo<>(..)` calls Foo's constructor (one name node is one reference: the call stands
; for the type's use too).
(object_creation_expression
  type: [
    (type_identifier) @name
    (generic_type
      (type_identifier) @name)
    (scoped_type_identifier
      (type_identifier) @name .)
  ]) @reference.call

; `Foo::bar`.
(method_reference
  (_)
  .
  (identifier) @name) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Types: every type name (declarations are `identifier`s, not `type_identifier`s). Type
; parameters declare, they do not refer.
; ---------------------------------------------------------------------------------------------

(type_identifier) @name @reference.type

(type_parameter
  (type_identifier) @not_a_reference)

; `@Override`, `@ThreadSafe("x")`: an annotation refers to its type.
(marker_annotation
  name: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.type

(annotation
  name: [
    (identifier) @name
    (scoped_identifier
      name: (identifier) @name)
  ]) @reference.type

; ---------------------------------------------------------------------------------------------
; Imports: the imported name (`import a.b.C;` -> `C`, `import static a.B.f;` -> `f`); a wildcard
; import (`a.b.*`) names no single item and is not captured.
; ---------------------------------------------------------------------------------------------

(import_declaration
  (scoped_identifier
    name: (identifier) @name)
  .) @reference.import

; ---------------------------------------------------------------------------------------------
; Comments (`@comment` on each whole comment node): Javadoc above a definition is its doc.
; ---------------------------------------------------------------------------------------------

(line_comment) @comment
(block_comment) @comment
