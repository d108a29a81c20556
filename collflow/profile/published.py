"""Published scaling results the model is compared with, each number next to its source.

Horovod (Sergeev & Del Balso, "Horovod: fast and easy distributed deep learning in
TensorFlow", arXiv:1802.05799, 2018, section 6 and its figures of images/s for 1-128 Pascal
GPUs): 88% scaling efficiency for Inception V3 and ResNet-101 and 68% for VGG-16 on 128
GPUs over 25 Gb/s Ethernet (TCP, and RoCE RDMA, which the paper reports adding a few
percent for the first two and ~30% for VGG-16).  The paper gives efficiencies, not the
inputs a model needs, so those come from elsewhere (sources below); where none could be
checked the value is marked as our assumption.

TensorFlow (Abadi et al., "TensorFlow: a system for large-scale machine learning", OSDI
2016, section 6.3, Figure 8(c)): Inception-v3 on 50 synchronous workers plus b backup
workers; b = 4 gave the shortest median step (1.93 s) and b = 3 the best normalized
speedup t(0)/t(b) x 50/(50+b), 9.5%.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

from .collectives import LINKS, Cluster, FlatRing
from .trace import StepProfile

__all__ = ["PublishedRun", "HOROVOD_RUNS", "horovod_profile", "horovod_cluster", "TF_BACKUP",
           "HOROVOD_FUSION_BYTES"]

# Horovod docs, "Tensor Fusion": default fusion buffer 64 MB (128 MB from v0.21.0, 2020)
HOROVOD_FUSION_BYTES = 64 * 1024 * 1024
# P100 training rates, TensorFlow's benchmarks page (tensorflow.org/performance/benchmarks,
# 2017: NVIDIA DGX-1, Tesla P100, synthetic data, batch 64): InceptionV3 142 img/s,
# ResNet-50 219 img/s.
P100_INCEPTION_V3_IMG_S = 142.0
P100_RESNET50_IMG_S = 219.0
# multiply-adds per 224x224 image: ResNet-50 3.8e9, ResNet-101 7.6e9 (He et al., "Deep
# residual learning", CVPR 2016, Table 1); VGG-16 15.5e9 (Simonyan & Zisserman 2015's
# configuration D, as tabulated by Canziani et al., arXiv:1605.07678, 2016)
MACS_RESNET50, MACS_RESNET101, MACS_VGG16 = 3.8e9, 7.6e9, 15.5e9


@dataclass(frozen=True)
class PublishedRun:
    """A published data-parallel run: the model's `params`, one GPU's `img_per_s` at
    `batch` per GPU, `gpus` in hosts of `gpus_per_host`, and the `reported_efficiency`."""

    name: str
    params: int
    batch: int
    img_per_s: float
    gpus: int
    gpus_per_host: int
    reported_efficiency: float
    sources: str

    @property
    def step_s(self) -> float:
        """One GPU's step at `batch` images."""
        return self.batch / self.img_per_s

    @property
    def grad_bytes(self) -> int:
        return 4 * self.params  # float32 gradients


_GPUS_NOTE = ("128 Pascal GPUs: Horovod paper section 6; 4 GPUs per server, batch 64 (tf_cnn_benchmarks' "
              "default): our assumption")
HOROVOD_RUNS: List[PublishedRun] = [
    PublishedRun("Inception V3", 23_851_784, 64, P100_INCEPTION_V3_IMG_S, 128, 4, 0.88,
                 "parameters: Keras Applications table (23.9M); 142 img/s: TF benchmarks, P100; 88%: Horovod paper. "
                 + _GPUS_NOTE),
    PublishedRun("ResNet-101", 44_707_176, 64, P100_RESNET50_IMG_S * MACS_RESNET50 / MACS_RESNET101, 128, 4, 0.88,
                 "parameters: Keras Applications table (44.7M); rate: ResNet-50's 219 img/s (TF benchmarks, P100) "
                 "scaled by multiply-adds 3.8e9/7.6e9 (He et al. Table 1); 88%: Horovod paper. " + _GPUS_NOTE),
    PublishedRun("VGG-16", 138_357_544, 64, P100_RESNET50_IMG_S * MACS_RESNET50 / MACS_VGG16, 128, 4, 0.68,
                 "parameters: Keras Applications table (138.4M); rate: ResNet-50's scaled by multiply-adds "
                 "(3.8e9/15.5e9): VGG's large convolutions run more efficiently per multiply-add on a GPU, so "
                 "this step is likely too long; 68%: Horovod paper. " + _GPUS_NOTE),
]


def horovod_profile(run: PublishedRun, fusion_bytes: int = HOROVOD_FUSION_BYTES) -> StepProfile:
    """The step as the model sees it: a forward pass of 1/3 of the step and a backward pass
    of 2/3 (a backward pass costs about twice the forward's multiply-adds) producing the
    gradients at a steady rate into fusion buffers of `fusion_bytes`."""
    buckets = max(1, math.ceil(run.grad_bytes / fusion_bytes))
    return StepProfile.synthetic(run.step_s / 3, 2 * run.step_s / 3, run.grad_bytes, buckets)


def horovod_cluster(network: str = "25GbE-RoCE", gpus_per_host: int = 4) -> FlatRing:
    """Horovod's 2018 ring (NCCL 2 across hosts: one flat ring) on hosts of PCIe GPUs."""
    return FlatRing(Cluster(f"{gpus_per_host} GPUs/host, PCIe 3.0, {network}", gpus_per_host,
                            LINKS["PCIe3-x16"], LINKS[network]))


# Abadi et al. 2016, section 6.3 / Figure 8(c)
TF_BACKUP = {
    "model": "Inception-v3",
    "workers": 50,
    "best_step_backups": 4,       # shortest median step with 4 backup workers ...
    "best_step_s": 1.93,          # ... 1.93 s
    "best_speedup_backups": 3,    # highest normalized speedup with 3 ...
    "best_speedup": 1.095,        # ... 9.5%
    "source": "Abadi et al., TensorFlow: a system for large-scale machine learning, OSDI 2016, section 6.3, "
              "Figure 8(c)",
}
