// A two-layer MLP (784 -> 128 -> 10) with a softmax cross-entropy loss:
// the forward pass of a small MNIST-sized classifier, batch 64.
// The batch is split over 4 devices (data parallelism); the weights are replicated.
mesh [data=4]

func @main(%x: f32[64,784] on [data, _],      // a batch of flattened 28x28 images
           %labels: f32[64,10] on [data, _],  // one-hot classes
           %w1: f32[784,128], %b1: f32[128],
           %w2: f32[128,10], %b2: f32[10])
    -> (loss: f32[], logits: f32[64,10] on [data, _]) {
  // Layer 1: h = relu(x . w1 + b1)
  %xw1 = dot_general %x, %w1 {lhs_contract=[1], rhs_contract=[0]} : f32[64,128]
  %b1b = broadcast %b1 {dims=[1]} : f32[64,128]
  %z1 = add %xw1, %b1b : f32[64,128]
  %zero = constant 0.0 : f32[64,128]
  %h = max %z1, %zero : f32[64,128]

  // Layer 2: logits = h . w2 + b2
  %hw2 = dot_general %h, %w2 {lhs_contract=[1], rhs_contract=[0]} : f32[64,10]
  %b2b = broadcast %b2 {dims=[1]} : f32[64,10]
  %logits = add %hw2, %b2b : f32[64,10]

  // log_softmax along the classes, shifted by the row maximum for stability
  %rowmax = reduce %logits {dims=[1], kind=max} : f32[64]
  %rowmax.b = broadcast %rowmax {dims=[0]} : f32[64,10]
  %shifted = sub %logits, %rowmax.b : f32[64,10]
  %e = exp %shifted : f32[64,10]
  %sumexp = reduce %e {dims=[1], kind=sum} : f32[64]
  %lse = log %sumexp : f32[64]
  %lse.b = broadcast %lse {dims=[0]} : f32[64,10]
  %logp = sub %shifted, %lse.b : f32[64,10]

  // loss = -sum(labels * logp) / batch
  %picked = mul %labels, %logp : f32[64,10]
  %total = reduce %picked {dims=[0,1], kind=sum} : f32[]
  %nll = neg %total : f32[]
  %batch = constant 64 : f32[]  // an integer literal may give a float value
  %loss = div %nll, %batch : f32[]
  return %loss, %logits
}
