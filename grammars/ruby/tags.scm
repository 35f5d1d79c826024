; Ruby tags: definitions and references (tree-sitter-ruby 0.23.1).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; A `def` is captured by where it stands: in a class body the extractor makes a function a method
; by itself; in a module body, in `class << self` and as `def self.x` it is captured as a method
; directly (a module's `def` is an instance method of the module, not a free function).

; ---------------------------------------------------------------------------------------------
; Modules and classes. `class A::B` is named `B` with `A` added to its scope.
; ---------------------------------------------------------------------------------------------

(module
  name: (constant) @name) @definition.module

(module
  name: (scope_resolution
    scope: (_) @qualifier
    name: (constant) @name)) @definition.module

(class
  name: (constant) @name) @definition.class

(class
  name: (scope_resolution
    scope: (_) @qualifier
    name: (constant) @name)) @definition.class

; ---------------------------------------------------------------------------------------------
; Methods. Top-level `def`s and `def`s inside blocks or conditionals are functions (methods again
; when the nearest enclosing definition is a class).
; ---------------------------------------------------------------------------------------------

(program
  (method
    name: (_) @name) @definition.function)

(class
  body: (body_statement
    (method
      name: (_) @name) @definition.function))

(module
  body: (body_statement
    (method
      name: (_) @name) @definition.method))

; `class << self ... def x ... end`: singleton methods of the enclosing class or module.
(singleton_class
  body: (body_statement
    (method
      name: (_) @name) @definition.method))

; `def` inside a method, a block (`included do`, `Class.new do`) or a conditional.
([
  (method body: (body_statement (method name: (_) @name) @definition.function))
  (do_block body: (body_statement (method name: (_) @name) @definition.function))
  (block body: (block_body (method name: (_) @name) @definition.function))
  (begin (method name: (_) @name) @definition.function)
  (then (method name: (_) @name) @definition.function)
  (else (method name: (_) @name) @definition.function)
])

; `def self.x`, `def obj.x`.
(singleton_method
  name: (_) @name) @definition.method

; `attr_accessor :id, :args` defines the fields `id` and `args` (the extractor drops the `:`).
(call
  !receiver
  method: (identifier) @_attr
  arguments: (argument_list
    (simple_symbol) @name @definition.field)
  (#any-of? @_attr "attr_accessor" "attr_reader" "attr_writer"))

; ---------------------------------------------------------------------------------------------
; Constants: `MAX = 1` at the top level or in a class or module body.
; ---------------------------------------------------------------------------------------------

(assignment
  left: (constant) @name) @definition.constant

; ---------------------------------------------------------------------------------------------
; Imports: `require "json"` -> `json`, `require_relative "queue/stats"` -> `queue/stats`.
; ---------------------------------------------------------------------------------------------

(call
  !receiver
  method: (identifier) @_method
  arguments: (argument_list
    .
    (string
      (string_content) @name))
  (#any-of? @_method "require" "require_relative" "load" "autoload")) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls. `foo(x)` and `foo x` are calls; `obj.foo`, `Foo.new`, `obj&.foo` are method calls. A
; bare `foo` without arguments parses as a local variable and is not captured. The import
; methods above are not also calls.
; ---------------------------------------------------------------------------------------------

(call
  !receiver
  method: (identifier) @name
  (#not-any-of? @name "require" "require_relative" "load" "autoload")) @reference.call

(call
  receiver: (_)
  method: [
    (identifier)
    (constant)
  ] @name) @reference.method_call

; ---------------------------------------------------------------------------------------------
; Type references: superclasses, mixins (`include`/`extend`/`prepend`), rescued exception
; classes, and constants a method is called on (`JSON.parse`, `Job.new`). For `A::B` the last
; name is the reference.
; ---------------------------------------------------------------------------------------------

(superclass
  [
    (constant) @name
    (scope_resolution
      name: (constant) @name)
  ]) @reference.type

(call
  !receiver
  method: (identifier) @_method
  arguments: (argument_list
    [
      (constant) @name
      (scope_resolution
        name: (constant) @name)
    ])
  (#any-of? @_method "include" "extend" "prepend")) @reference.type

(exceptions
  [
    (constant) @name
    (scope_resolution
      name: (constant) @name)
  ]) @reference.type

(call
  receiver: [
    (constant) @name
    (scope_resolution
      name: (constant) @name)
  ]) @reference.type

; Comments, for reading a definition with the docs above it: `#` lines and `=begin`/`=end`.
(comment) @comment
