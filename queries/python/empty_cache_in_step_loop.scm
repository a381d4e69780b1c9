; CUL201 empty-cache-in-step-loop
; Candidates: every call whose callee ends in `empty_cache`; the check resolves the name to
; torch.cuda.empty_cache and decides whether it runs once per batch.
(call
  function: [
    (attribute attribute: (identifier) @_method)
    (identifier) @_method
  ]
  (#eq? @_method "empty_cache")) @violation
