(module $namelast
  ;; fixture: no function, global or export, and a trailing name section
  ;; (wat2wasm --debug-names): the sections the fuel pass adds must come
  ;; before it
  (memory 1)
)
