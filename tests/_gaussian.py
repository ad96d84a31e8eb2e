"""The readout integrated out by brute force: one V^2-dimensional Gaussian integral over
vec(W) with an explicit design matrix (no K, B or M anywhere), the reference the exact
actions are checked against."""
import numpy as np


def gaussian_integral_over_W(h, y, n: int, hyper) -> float:
    """-log int dW N(W; 0, sw2/V) exp(-beta/(2n) sum ||y - W h||^2) for the features and
    one-hot targets of every (sequence, loss row), ``h, y: (N, V)``; n loss rows per sequence."""
    V = h.shape[1]
    # residual r = y - W h; with w = vec(W) (row-major), (W h)_i = sum_j w[i V + j] h_j
    Phi = np.kron(np.eye(V), h)  # rows: (i, sample) -> entries w[i V + j] h_j
    yv = y.T.reshape(-1)
    beta, sw2 = hyper.beta, hyper.sigma_w2
    Lam = (V / sw2) * np.eye(V * V) + (beta / n) * Phi.T @ Phi
    b = (beta / n) * Phi.T @ yv
    sign, logdet = np.linalg.slogdet(Lam * sw2 / V)
    assert sign > 0
    return 0.5 * logdet - 0.5 * b @ np.linalg.solve(Lam, b) + beta / (2 * n) * yv @ yv
