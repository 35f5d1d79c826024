; JavaScript (and JSX) tags: definitions and references (tree-sitter-javascript 0.25).
;
; Convention (see server/index/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; The TypeScript query (grammars/typescript/tags.scm) repeats the JavaScript part of this file with
; TypeScript node names; keep the two in step.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

; `const foo = () => ...`, `let foo = function () {...}`, `var gen = function* () {...}`: a function
; named by its variable, at any depth. The definition spans the declarator (name through body).
(variable_declarator
  name: (identifier) @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

; `const Foo = class { ... }`.
(variable_declarator
  name: (identifier) @name
  value: (class)) @definition.class

; Class and object-literal methods, including getters, setters, `static` and `#private` methods and
; the constructor.
(method_definition
  name: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.method

; Class fields: `count = 0`, `#items = []` (also when the value is an arrow function).
(field_definition
  property: [
    (property_identifier)
    (private_property_identifier)
  ] @name) @definition.field

; Functions stored in object literals and on objects: `{ render: () => ... }`,
; `module.exports.create = function () {...}`.
(pair
  key: (property_identifier) @name
  value: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

(assignment_expression
  left: (member_expression
    property: (property_identifier) @name)
  right: [
    (arrow_function)
    (function_expression)
    (generator_function)
  ]) @definition.function

; Module-level bindings whose value is not a function or class (those are captured above):
; UPPER_CASE names are constants, other names variables. Destructuring patterns are not captured.
(program
  [
    (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (call_expression) (false)
          (identifier) (member_expression) (new_expression) (null) (number) (object)
          (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
          (ternary_expression) (true) (unary_expression) (undefined)
        ]) @definition.constant)
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (call_expression) (false)
          (identifier) (member_expression) (new_expression) (null) (number) (object)
          (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
          (ternary_expression) (true) (unary_expression) (undefined)
        ]) @definition.constant)
    (export_statement
      declaration: (lexical_declaration
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (await_expression) (binary_expression) (call_expression) (false)
            (identifier) (member_expression) (new_expression) (null) (number) (object)
            (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
            (ternary_expression) (true) (unary_expression) (undefined)
          ]) @definition.constant))
  ]
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(program
  [
    (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (call_expression) (false)
          (identifier) (member_expression) (new_expression) (null) (number) (object)
          (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
          (ternary_expression) (true) (unary_expression) (undefined)
        ]) @definition.variable)
    (variable_declaration
      (variable_declarator
        name: (identifier) @name
        value: [
          (array) (await_expression) (binary_expression) (call_expression) (false)
          (identifier) (member_expression) (new_expression) (null) (number) (object)
          (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
          (ternary_expression) (true) (unary_expression) (undefined)
        ]) @definition.variable)
    (export_statement
      declaration: (lexical_declaration
        (variable_declarator
          name: (identifier) @name
          value: [
            (array) (await_expression) (binary_expression) (call_expression) (false)
            (identifier) (member_expression) (new_expression) (null) (number) (object)
            (parenthesized_expression) (regex) (string) (subscript_expression) (template_string)
            (ternary_expression) (true) (unary_expression) (undefined)
          ]) @definition.variable))
  ]
  (#not-match? @name "^_*[A-Z][A-Z0-9_]*$"))

; ---------------------------------------------------------------------------------------------
; Calls: `foo()` is a call, `x.foo()` / `this.#foo()` a method call, `new Foo()` a call of `Foo`.
; JSX elements with a capitalised name (`<TodoItem />`, `<ui.Button>`) are calls of the component.
; ---------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (member_expression
    property: [
      (property_identifier)
      (private_property_identifier)
    ] @name)) @reference.method_call

(new_expression
  constructor: [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.call

((jsx_opening_element
  name: [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.call
  (#match? @name "^[A-Z]"))

((jsx_self_closing_element
  name: [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.call
  (#match? @name "^[A-Z]"))

; ---------------------------------------------------------------------------------------------
; Imports: the imported names. `import {a, b as c} from "m"` -> `a`, `b`; `import d from "m"` -> `d`;
; `import * as ns from "m"` -> `ns`. CommonJS `require` is an ordinary call.
; ---------------------------------------------------------------------------------------------

(import_specifier
  name: (identifier) @name) @reference.import

(import_clause
  (identifier) @name) @reference.import

(namespace_import
  (identifier) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Type references: the base class of `class A extends B` / `extends ns.B`.
; ---------------------------------------------------------------------------------------------

(class_heritage
  [
    (identifier) @name
    (member_expression
      property: (property_identifier) @name)
  ]) @reference.type

; Comments, for reading a definition with the docs above it (`@comment` on each whole comment
; node).
(comment) @comment
(html_comment) @comment
