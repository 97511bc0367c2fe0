"""The probes: what the app measures inside the model, beside the paper's own code (model/). Attribution
(integrated gradients and its cheaper relatives), the query and key vectors of one head, the logit lens,
inside one layer (the residual stream sub-layer by sub-layer), and three ways to compute one attention
sub-layer. They take a Transformer and read it; the model never imports them."""
