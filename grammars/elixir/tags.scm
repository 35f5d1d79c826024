; Elixir tags: definitions and references (tree-sitter-elixir 0.3).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; In this grammar every definition is a call (`defmodule X do ... end` is the call `defmodule`
; with a do block), so definitions are calls whose target is a defining keyword. Nested modules
; nest; `def`/`defp` are functions (methods inside `defprotocol` and `defimpl`); `defmacro`,
; `defmacrop`, `defguard`, `defguardp` are macros; `defstruct` is a struct named after its module.
; `@doc`/`@moduledoc` sit above what they document and are leading lines (language.toml).

; ---------------------------------------------------------------------------------------------
; Modules, protocols, implementations
; ---------------------------------------------------------------------------------------------

((call
  target: (identifier) @_keyword
  (arguments
    .
    (alias) @name)) @definition.module
  (#any-of? @_keyword "defmodule" "defexception"))

((call
  target: (identifier) @_keyword
  (arguments
    .
    (alias) @name)) @definition.protocol
  (#eq? @_keyword "defprotocol"))

; `defimpl Keyed, for: Map do`: an impl for the implementing type (`Map`).
((call
  target: (identifier) @_keyword
  (arguments
    .
    (alias)
    (keywords
      (pair
        key: (keyword) @_for
        value: (alias) @name)))) @definition.impl
  (#eq? @_keyword "defimpl")
  (#match? @_for "^for:"))

; `defimpl Keyed do` inside the module it implements for.
((call
  target: (identifier) @_keyword
  (arguments
    .
    (alias) @name
    .)) @definition.impl
  (#eq? @_keyword "defimpl"))

; `defstruct rate: 10` inside `defmodule Config`: the struct `%Config{}`.
((call
  target: (identifier) @_module
  (arguments
    .
    (alias) @name)
  (do_block
    (call
      target: (identifier) @_keyword) @definition.struct))
  (#eq? @_module "defmodule")
  (#eq? @_keyword "defstruct"))

; ---------------------------------------------------------------------------------------------
; Functions and macros, in every head form: `def f(x) do`, `def f(x) when g do`, `def f, do:`,
; `def f when g, do:`.
; ---------------------------------------------------------------------------------------------

((call
  target: (identifier) @_keyword
  (arguments
    .
    [
      (call
        target: (identifier) @name)
      (identifier) @name
      (binary_operator
        left: [
          (call
            target: (identifier) @name)
          (identifier) @name
        ]
        operator: "when")
    ])) @definition.function
  (#any-of? @_keyword "def" "defp" "defdelegate"))

((call
  target: (identifier) @_keyword
  (arguments
    .
    [
      (call
        target: (identifier) @name)
      (identifier) @name
      (binary_operator
        left: [
          (call
            target: (identifier) @name)
          (identifier) @name
        ]
        operator: "when")
    ])) @definition.macro
  (#any-of? @_keyword "defmacro" "defmacrop" "defguard" "defguardp"))

; ---------------------------------------------------------------------------------------------
; Module attributes: `@default_rate 10` is a constant; `@type key :: term()` a type. The
; attributes Elixir itself reads (docs, specs, callbacks, compile options) are neither.
; ---------------------------------------------------------------------------------------------

((unary_operator
  operator: "@"
  operand: (call
    target: (identifier) @name
    (arguments))) @definition.constant
  (#not-any-of? @name "doc" "moduledoc" "typedoc" "spec" "callback" "macrocallback" "impl"
    "type" "typep" "opaque" "behaviour" "derive" "enforce_keys" "before_compile"
    "after_compile" "on_definition" "on_load" "compile" "dialyzer" "external_resource"
    "deprecated" "since" "optional_callbacks" "vsn" "file" "tag" "moduletag" "describetag"))

((unary_operator
  operator: "@"
  operand: (call
    target: (identifier) @_attribute
    (arguments
      (binary_operator
        left: [
          (identifier) @name
          (call
            target: (identifier) @name)
        ]
        operator: "::")))) @definition.type
  (#any-of? @_attribute "type" "typep" "opaque"))

; An attribute's name (`@doc`, `@spec`) is not a call, nor is the function a `@spec` describes
; (`@spec check(key()) :: :ok`). The types named in a spec (`key()`) are left as calls.
(unary_operator
  operator: "@"
  operand: (call
    target: (identifier) @not_a_reference))

((unary_operator
  operator: "@"
  operand: (call
    target: (identifier) @_spec
    (arguments
      (binary_operator
        left: (call
          target: (identifier) @not_a_reference)
        operator: "::"))))
  (#any-of? @_spec "spec" "callback" "macrocallback"))

; ---------------------------------------------------------------------------------------------
; Imports: `alias A.B`, `alias A.{B, C}` (-> `B`, `C`), `import Kernel`, `use GenServer`,
; `require Logger` -> the module named.
; ---------------------------------------------------------------------------------------------

((call
  target: (identifier) @_keyword
  (arguments
    .
    (alias) @name)) @reference.import
  (#any-of? @_keyword "alias" "import" "use" "require"))

((call
  target: (identifier) @_keyword
  (arguments
    .
    (dot
      right: (tuple
        (alias) @name)))) @reference.import
  (#any-of? @_keyword "alias" "import" "use" "require"))

; ---------------------------------------------------------------------------------------------
; Calls: local calls `f(x)` and remote calls `Map.get(m, k)`; Elixir has no methods. The defining
; and importing keywords and special forms are not calls. `map.key` (a field read, parsed as a
; call without parentheses) is not captured: only remote calls on a module alias are.
; ---------------------------------------------------------------------------------------------

((call
  target: (identifier) @name) @reference.call
  (#not-any-of? @name "def" "defp" "defmodule" "defmacro" "defmacrop" "defguard" "defguardp"
    "defprotocol" "defimpl" "defstruct" "defexception" "defdelegate" "defoverridable"
    "alias" "import" "use" "require" "quote" "unquote" "unquote_splicing" "case" "cond" "if"
    "unless" "with" "for" "receive" "try" "raise" "reraise" "throw" "fn" "__MODULE__"))

(call
  target: (dot
    left: (alias)
    right: (identifier) @name)) @reference.call

; ---------------------------------------------------------------------------------------------
; Type references: struct literals and patterns `%Config{}`, remote types in specs
; (`GenServer.on_start()` is caught as a call above).
; ---------------------------------------------------------------------------------------------

(struct
  (alias) @name) @reference.type

; Comments, for reading a definition with the docs above it.
(comment) @comment
