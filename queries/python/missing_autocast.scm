; CUL302 missing-autocast
; Candidates: every `.backward()` call; the check reports the first backward of each step loop
; that runs without autocast or any other form of reduced precision.
(call
  function: (attribute attribute: (identifier) @_method)
  (#eq? @_method "backward")) @violation
