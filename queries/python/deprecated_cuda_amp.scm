; CUL303 deprecated-cuda-amp
; Candidates: imports of `torch.cuda.amp`, calls and bare decorators that may reach its
; `autocast`, `GradScaler`, `custom_fwd` or `custom_bwd`. The check resolves names through imports.

; from torch.cuda.amp import autocast; from torch.cuda import amp
(import_from_statement
  module_name: (dotted_name) @_module
  (#any-of? @_module "torch.cuda.amp" "torch.cuda")) @violation

; import torch.cuda.amp; import torch.cuda.amp as cuda_amp
(import_statement
  name: [
    (dotted_name) @_module
    (aliased_import
      name: (dotted_name) @_module)
  ]
  (#eq? @_module "torch.cuda.amp")) @violation

; torch.cuda.amp.autocast(...), amp.GradScaler(...), @amp.custom_fwd(cast_inputs=...)
(call
  function: (attribute
    attribute: (identifier) @_name)
  (#any-of? @_name "autocast" "GradScaler" "custom_fwd" "custom_bwd")) @violation

; autocast(...) after `from torch.cuda.amp import autocast` (or an alias of it)
(call
  function: (identifier)) @violation

; @custom_fwd, @torch.cuda.amp.custom_bwd
(decorator
  [
    (identifier)
    (attribute)
  ]) @violation
