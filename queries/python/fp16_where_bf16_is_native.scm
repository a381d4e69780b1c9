; CUL802 fp16-where-bf16-is-native
; Candidates: autocast calls, and the framework switches that choose fp16 with loss scaling.
; The check resolves the names, reads the dtype and needs a GPU with native bf16.

(call
  function: [
    (attribute attribute: (identifier) @_name)
    (identifier) @_name
  ]
  (#eq? @_name "autocast")) @violation

(keyword_argument
  name: (identifier) @_keyword
  (#any-of? @_keyword "fp16" "mixed_precision" "precision")) @violation
