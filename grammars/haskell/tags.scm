; Haskell tags: definitions and references (tree-sitter-haskell 0.24).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name; `@reference.<kind>` on the referring node and `@name` on the referenced name.
; `module Data.JobQueue where` encloses the rest of the file (`@scope.file`). `data`, `newtype`,
; `type` and type/data families are types, record fields fields; a type class is a trait whose
; method signatures are its methods; an instance is an impl named by its type. Top-level
; equations are functions (one definition per equation: `f [] = ..; f xs = ..` is two); type
; signatures are not definitions of their own. `where`-bound helpers are functions inside the
; equation that binds them.
; Haddock comments (`-- |`, `-- ^`) are their own node kind, `haddock` (see the end of the file).

; ---------------------------------------------------------------------------------------------
; Definitions
; ---------------------------------------------------------------------------------------------

(header
  module: (module) @name) @definition.module @scope.file

(data_type
  name: (name) @name) @definition.type

(newtype
  name: (name) @name) @definition.type

(type_synonym
  name: (name) @name) @definition.type

(type_family
  name: (name) @name) @definition.type

(data_family
  name: (name) @name) @definition.type

; Record fields: `{ jobName :: String }`.
(field
  name: (field_name
    (variable) @name)) @definition.field

(class
  name: (name) @name) @definition.trait

; A class's methods are its signatures (`pretty :: a -> String`); default equations are not
; captured again.
(class_declarations
  (signature
    name: (variable) @name) @definition.function)

; `instance Pretty Job where`: an impl named by the instance's type.
(instance
  patterns: (type_patterns
    .
    (_) @name)) @definition.impl

(instance_declarations
  [
    (function
      name: (variable) @name)
    (bind
      name: (variable) @name)
  ] @definition.function)

; Top-level equations: `push queue job = ...` and `defaultCapacity = 64`.
(declarations
  [
    (function
      name: (variable) @name)
    (bind
      name: (variable) @name)
  ] @definition.function)

; `where` helpers: `render job = header <> body where header = ..; body n = ..` (of an equation or
; of a pattern binding).
([
  (function
    binds: (local_binds
      [
        (function
          name: (variable) @name)
        (bind
          name: (variable) @name)
      ] @definition.function))
  (bind
    binds: (local_binds
      [
        (function
          name: (variable) @name)
        (bind
          name: (variable) @name)
      ] @definition.function))
])

; ---------------------------------------------------------------------------------------------
; Imports: `import qualified Data.Map.Strict as Map` -> `Data.Map.Strict`.
; ---------------------------------------------------------------------------------------------

(import
  module: (module) @name) @reference.import

; ---------------------------------------------------------------------------------------------
; Calls: the function of an application, `f x y` and `Map.insert k v` (the innermost `apply`
; holds the function). Functions passed as values (`map pretty`) are not calls.
; ---------------------------------------------------------------------------------------------

(apply
  function: [
    (variable) @name
    (qualified
      id: (variable) @name)
  ]) @reference.call

; ---------------------------------------------------------------------------------------------
; Type references: every type constructor name (`name` nodes are only type-level names) in
; signatures, fields, deriving clauses, instance heads and export lists; a declaring name is a
; definition and drops out by itself.
; ---------------------------------------------------------------------------------------------

(name) @name @reference.type

; Comments, for reading a definition with the docs above it. Haddock comments (`-- |`, `-- ^`)
; are `haddock` nodes: capturing them too (`[(comment) (haddock)] @comment`) attaches them as docs,
; and the comment check (`chunk::tests::every_query_captures_every_comment`) walks them too.
[(comment) (haddock)] @comment
