; Markdown tags: headings as sections (tree-sitter-markdown 0.5.4, block grammar).
;
; Convention (see server/syntax/src/tags.rs): `@definition.<kind>` on the whole definition node and
; `@name` on its name. The block grammar wraps an ATX heading (`## Usage`) and everything up to
; the next heading of its level or higher in a `section`, so a section encloses its sub-headings
; and the scope chain of a heading is the headings above it. The name is the heading's text
; without its `#`s. Markdown has no comments (an HTML comment is an HTML block) and no references.

(section
  (atx_heading
    heading_content: (inline) @name)) @definition.section

; A setext heading (`Title` over `=====` or `-----`) opens no `section` in this grammar: it is a
; section of its own two lines, inside the ATX section around it.
(setext_heading
  heading_content: (paragraph) @name) @definition.section
