stateDiagram-v2
    direction LR
    [*] --> draft
    draft --> review: submitted
    review --> [*]: reviewed [payload.approved == true]
    review --> draft: reviewed [otherwise]
