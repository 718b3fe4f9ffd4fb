graph [
  node [ id 0 label "A" ]
  node [ id 1 label "B" ]
  node [ id 2 label "C" ]
  node [ id 3 label "D" ]
  edge [ source 0 target 1 ]
  edge [ source 2 target 3 ]
]
