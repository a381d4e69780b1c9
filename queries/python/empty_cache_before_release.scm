; CUL202 empty-cache-before-release
; Candidates: every call whose callee ends in `empty_cache`; the check looks for a later `del`
; or `gc.collect()` in the same block.
(call
  function: [
    (attribute attribute: (identifier) @_method)
    (identifier) @_method
  ]
  (#eq? @_method "empty_cache")) @violation
