; CUL403 tensor-stored-on-module
; Candidates: every `self.<attr> = ...`; the check keeps those in `forward` of an `nn.Module`
; subclass whose value is computed from the inputs.
(assignment
  left: (attribute
    object: (identifier) @_self)
  (#eq? @_self "self")) @violation
