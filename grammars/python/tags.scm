; Python tags: definitions and references (tree-sitter-python 0.25).
;
; Convention (see server/index/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; Functions directly inside a class become methods in the extractor, so every `def` is captured as
; a function here. A definition spans the `class`/`def` statement itself, not its decorators.

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function

; Module-level assignments: UPPER_CASE names are constants, other names are variables.
(module
  (expression_statement
    (assignment
      left: (identifier) @name) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(module
  (expression_statement
    (assignment
      left: (identifier) @name) @definition.variable)
  (#not-match? @name "^_*[A-Z][A-Z0-9_]*$"))

; `type JobId = int`, `type Pair[T] = tuple[T, T]` (Python 3.12).
(type_alias_statement
  left: (type
    [
      (identifier) @name
      (generic_type
        (identifier) @name)
    ])) @definition.type

; Class-body assignments (dataclass fields, class attributes): `id: int = 0`.
(class_definition
  body: (block
    (expression_statement
      (assignment
        left: (identifier) @name) @definition.field)))

; ---------------------------------------------------------------------------------------------
; Calls. Python cannot tell `module.func()` from `obj.method()`; every attribute call is a
; method_call. Calling a class (`Queue(root)`) is a call.
; ---------------------------------------------------------------------------------------------

(call
  function: (identifier) @name) @reference.call

(call
  function: (attribute
    attribute: (identifier) @name)) @reference.method_call

; Bare decorators are calls of the decorator: `@dataclass`, `@functools.cache`. Decorators with
; arguments (`@app.route("/")`) are call nodes and caught above.
(decorator
  [
    (identifier) @name
    (attribute
      attribute: (identifier) @name)
  ]) @reference.call

; ---------------------------------------------------------------------------------------------
; Imports: `import a.b` -> `a.b` (the whole dotted module name); `import a as b` -> `a`;
; `from m import x, y as z` -> `x`, `y` (the imported names, not the module). Star imports and
; `from __future__` imports are not captured.
; ---------------------------------------------------------------------------------------------

(import_statement
  name: [
    (dotted_name) @name
    (aliased_import
      name: (dotted_name) @name)
  ]) @reference.import

(import_from_statement
  name: [
    (dotted_name) @name
    (aliased_import
      name: (dotted_name) @name)
  ]) @reference.import

; ---------------------------------------------------------------------------------------------
; Type references: names in annotations (`x: Job`, `-> Optional[Job]`, `list[Job]`, `a.B`), the
; right-hand side of a type alias, and base classes. Only annotation positions are listed, so a
; type alias's own name and generic parameter declarations (`def f[T]`) are not captured. String
; annotations (`"Job"`) are not parsed. Builtin scalar types (`int`, `str`, ...) are skipped, as
; primitive types are in the other languages; containers (`list`, `dict`) are kept.
; ---------------------------------------------------------------------------------------------

([
  (assignment type: (type (identifier) @name))
  (assignment type: (type (generic_type (identifier) @name)))
  (assignment type: (type (member_type (identifier) @name)))
  (function_definition return_type: (type (identifier) @name))
  (function_definition return_type: (type (generic_type (identifier) @name)))
  (function_definition return_type: (type (member_type (identifier) @name)))
  (typed_parameter type: (type (identifier) @name))
  (typed_parameter type: (type (generic_type (identifier) @name)))
  (typed_parameter type: (type (member_type (identifier) @name)))
  (typed_default_parameter type: (type (identifier) @name))
  (typed_default_parameter type: (type (generic_type (identifier) @name)))
  (typed_default_parameter type: (type (member_type (identifier) @name)))
  (type_alias_statement right: (type (identifier) @name))
  (type_alias_statement right: (type (generic_type (identifier) @name)))
  (type_alias_statement right: (type (member_type (identifier) @name)))
  ; Arguments of a generic: `dict[str, Job]`.
  (generic_type (type_parameter (type (identifier) @name)))
  (generic_type (type_parameter (type (generic_type (identifier) @name))))
  (generic_type (type_parameter (type (member_type (identifier) @name))))
  (union_type (type (identifier) @name))
  (union_type (type (generic_type (identifier) @name)))
  (union_type (type (member_type (identifier) @name)))
] @reference.type
  (#not-any-of? @name "bool" "bytes" "bytearray" "complex" "float" "int" "object" "str"))

; Dotted annotations (`x: log.Logger`) and unions (`Job | None`, `A | B | None`): inside an
; annotation these parse as expressions. Every `type` node is an annotation or alias right-hand
; side except a type alias's left-hand side, whose name is not an attribute or a union.
([
  (type (attribute attribute: (identifier) @name))
  (type (binary_operator left: (identifier) @name))
  (type (binary_operator right: (identifier) @name))
  (type (binary_operator left: (attribute attribute: (identifier) @name)))
  (type (binary_operator right: (attribute attribute: (identifier) @name)))
  (type (binary_operator left: (binary_operator left: (identifier) @name)))
  (type (binary_operator left: (binary_operator right: (identifier) @name)))
] @reference.type
  (#not-any-of? @name "bool" "bytes" "bytearray" "complex" "float" "int" "object" "str"))

; Caught exception classes: `except KeyError:`, `except (OSError, json.JSONDecodeError) as e:`.
(except_clause
  value: [
    (identifier) @name
    (attribute
      attribute: (identifier) @name)
    (tuple
      [
        (identifier) @name
        (attribute
          attribute: (identifier) @name)
      ])
  ]) @reference.type

; Base classes: `class Job(Base, abc.ABC)`; keyword arguments (`metaclass=`) are not bases.
(class_definition
  superclasses: (argument_list
    [
      (identifier) @name
      (attribute
        attribute: (identifier) @name)
    ])) @reference.type

; Comments, for reading a definition with the docs above it (`@comment` on each whole comment
; node).
(comment) @comment
