graph [
  label "RepeatedEdges"
  node [
    id 2
    label "Gamma"
  ]
  node [
    id 0
    label "Alpha"
  ]
  node [
    id 1
    label "Beta"
  ]
  node [
    id 3
    label "Alpha"
  ]
  edge [
    source 0
    target 1
  ]
  edge [
    source 1
    target 0
  ]
  edge [
    source 0
    target 1
  ]
  edge [
    source 1
    target 2
  ]
  edge [
    source 2
    target 2
  ]
  edge [
    source 2
    target 3
  ]
]
