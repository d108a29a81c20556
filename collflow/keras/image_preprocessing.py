"""tf.keras.preprocessing.image (TF 1.15): ImageDataGenerator with flow() (NumpyArrayIterator)
and flow_from_directory() (DirectoryIterator), the Iterator base and image_utils' helpers.

get_random_transform draws from np.random in Keras's order, and the iterators seed np.random
with seed + batches seen as Keras does, so a seeded generator picks Keras's parameters; the
affine resampling is collflow's (image_utils.apply_affine_transform)."""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Dict, Iterator as _It, List, Optional, Sequence as _Seq

import numpy as np

from . import backend as K
from .data_adapter import Sequence
from .image_utils import (apply_affine_transform, apply_brightness_shift, apply_channel_shift, array_to_img,
                          flip_axis, img_to_array, load_img, random_brightness, random_channel_shift,
                          random_rotation, random_shear, random_shift, random_zoom, save_img)

__all__ = ["ImageDataGenerator", "Iterator", "NumpyArrayIterator", "DirectoryIterator", "apply_affine_transform",
           "apply_brightness_shift", "apply_channel_shift", "array_to_img", "img_to_array", "load_img", "save_img",
           "random_brightness", "random_channel_shift", "random_rotation", "random_shear", "random_shift",
           "random_zoom"]


class Iterator(Sequence):
    """Batches of indices into n samples (a keras.utils.Sequence and a Python iterator): the
    order np.random-permuted per epoch when shuffle, np.random seeded with seed + batches seen."""

    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: Optional[int]):
        self.n, self.batch_size, self.seed, self.shuffle = n, batch_size, seed, shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array: Optional[np.ndarray] = None
        self.index_generator = self._flow_index()

    def _set_index_array(self) -> None:
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __getitem__(self, idx: int) -> Any:
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}")
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(
            self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)])

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self) -> None:
        self._set_index_array()

    def reset(self) -> None:
        self.batch_index = 0

    def _flow_index(self) -> _It[np.ndarray]:
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current = (self.batch_index * self.batch_size) % self.n if self.n else 0
            self.batch_index = self.batch_index + 1 if self.n > current + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[current:current + self.batch_size]

    def __iter__(self) -> "Iterator":
        return self

    def __next__(self) -> Any:
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def next(self) -> Any:
        return self.__next__()

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        raise NotImplementedError

    def _save(self, batch_x: np.ndarray, index_array: np.ndarray) -> None:
        if not getattr(self, "save_to_dir", None):
            return
        for i, j in enumerate(index_array):
            img = array_to_img(batch_x[i], self.data_format, scale=True)
            fname = "{prefix}_{index}_{hash}.{format}".format(prefix=self.save_prefix, index=j,
                                                               hash=np.random.randint(1e4), format=self.save_format)
            img.save(os.path.join(self.save_to_dir, fname))


class NumpyArrayIterator(Iterator):
    """ImageDataGenerator.flow's batches of a rank-4 array (with labels, sample weights and
    extra arrays x[1:] when given), each image transformed and standardized."""

    def __init__(self, x: Any, y: Any, image_data_generator: Any, batch_size: int = 32, shuffle: bool = False,
                 sample_weight: Any = None, seed: Optional[int] = None, data_format: Optional[str] = None,
                 save_to_dir: Optional[str] = None, save_prefix: str = "", save_format: str = "png",
                 subset: Optional[str] = None, dtype: Any = None):
        self.dtype = dtype or K.floatx()
        x_misc: List[np.ndarray] = []
        if isinstance(x, (tuple, list)):
            x_misc = [np.asarray(x[1])] if not isinstance(x[1], list) else [np.asarray(e) for e in x[1]]
            x = x[0]
            for e in x_misc:
                if len(x) != len(e):
                    raise ValueError("All of the arrays in `x` should have the same length. Found a pair with: "
                                     f"len(x[0]) = {len(x)}, len(x[?]) = {len(e)}")
        if y is not None and len(x) != len(y):
            raise ValueError("`x` (images tensor) and `y` (labels) should have the same length. Found: x.shape = "
                             f"{np.asarray(x).shape}, y.shape = {np.asarray(y).shape}")
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError("`x` (images tensor) and `sample_weight` should have the same length. Found: x.shape = "
                             f"{np.asarray(x).shape}, sample_weight.shape = {np.asarray(sample_weight).shape}")
        if subset is not None:
            if subset not in ("training", "validation"):
                raise ValueError(f"Invalid subset name: {subset}; expected \"training\" or \"validation\".")
            split = int(len(x) * image_data_generator._validation_split)
            if y is not None and not np.array_equal(np.unique(y[:split]), np.unique(y[split:])):
                raise ValueError("Training and validation subsets have different number of classes after the split. "
                                 "If your numpy arrays are sorted by the label, you might want to shuffle them.")
            part = slice(None, split) if subset == "validation" else slice(split, None)
            x = x[part]
            x_misc = [np.asarray(e[part]) for e in x_misc]
            if y is not None:
                y = y[part]
            if sample_weight is not None:
                sample_weight = sample_weight[part]
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError(f"Input data in `NumpyArrayIterator` should have rank 4. You passed an array with shape "
                             f"{self.x.shape}")
        self.data_format = data_format or K.image_data_format()
        axis = 3 if self.data_format == "channels_last" else 1
        if self.x.shape[axis] not in (1, 3, 4):
            warnings.warn(f'NumpyArrayIterator is set to use the data format convention "{self.data_format}" '
                          f"(channels on axis {axis}), i.e. expected either 1, 3, or 4 channels on axis {axis}. "
                          f"However, it was passed an array with shape {self.x.shape} ({self.x.shape[axis]} "
                          "channels).")
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        gen = self.image_data_generator
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = gen.get_random_transform(x.shape)
            x = gen.apply_transform(x.astype(self.dtype), params)
            batch_x[i] = gen.standardize(x)
        self._save(batch_x, index_array)
        misc = [e[index_array] for e in self.x_misc]
        first = batch_x if not misc else [batch_x] + misc
        if self.y is None:
            return first
        out: tuple = (first, self.y[index_array])
        if self.sample_weight is not None:
            out += (self.sample_weight[index_array],)
        return out


def _valid_files(directory: str, formats: _Seq[str], follow_links: bool) -> _It[tuple]:
    """(root, file name) of the image files under directory, walked in sorted order."""
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda e: e[0]):
        for fname in sorted(files):
            low = fname.lower()
            if low.endswith(".tiff"):
                warnings.warn("Using '.tiff' files with multiple bands will cause distortion. Please verify your "
                              "output.")
            if any(low.endswith("." + ext) for ext in formats):
                yield root, fname


class DirectoryIterator(Iterator):
    """flow_from_directory's batches: one class per subfolder of `directory` (sorted, or
    `classes`), the images of each (subfolders included) in sorted order, loaded at
    target_size in color_mode, labels by class_mode."""

    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(self, directory: str, image_data_generator: Any, target_size: _Seq[int] = (256, 256),
                 color_mode: str = "rgb", classes: Optional[List[str]] = None, class_mode: Optional[str] = "categorical",
                 batch_size: int = 32, shuffle: bool = True, seed: Optional[int] = None,
                 data_format: Optional[str] = None, save_to_dir: Optional[str] = None, save_prefix: str = "",
                 save_format: str = "png", follow_links: bool = False, subset: Optional[str] = None,
                 interpolation: str = "nearest", dtype: Any = None):
        self.dtype = dtype or K.floatx()
        self.directory = str(directory)
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        if color_mode not in ("rgb", "rgba", "grayscale"):
            raise ValueError(f"Invalid color mode: {color_mode}; expected \"rgb\", \"rgba\", or \"grayscale\".")
        self.color_mode = color_mode
        self.data_format = data_format or K.image_data_format()
        channels = {"rgba": 4, "rgb": 3, "grayscale": 1}[color_mode]
        self.image_shape = self.target_size + (channels,) if self.data_format == "channels_last" else \
            (channels,) + self.target_size
        if class_mode not in self.allowed_class_modes:
            raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: {self.allowed_class_modes}")
        self.class_mode = class_mode
        self.save_to_dir, self.save_prefix, self.save_format = save_to_dir, save_prefix, save_format
        self.interpolation = interpolation
        if subset is not None:
            vs = image_data_generator._validation_split
            if subset == "validation":
                split: Optional[tuple] = (0, vs)
            elif subset == "training":
                split = (vs, 1)
            else:
                raise ValueError(f"Invalid subset name: {subset}; expected \"training\" or \"validation\"")
        else:
            split = None
        self.split, self.subset = split, subset
        if not classes:
            classes = [d for d in sorted(os.listdir(self.directory))
                       if os.path.isdir(os.path.join(self.directory, d))]
        self.num_classes = len(classes)
        self.class_indices: Dict[str, int] = dict(zip(classes, range(len(classes))))
        labels: List[int] = []
        self.filenames: List[str] = []
        for name in classes:
            sub = os.path.join(self.directory, name)
            files = list(_valid_files(sub, self.white_list_formats, follow_links))
            if split:
                files = files[int(split[0] * len(files)):int(split[1] * len(files))]
            for root, fname in files:
                labels.append(self.class_indices[name])
                self.filenames.append(os.path.join(name, os.path.relpath(os.path.join(root, fname), sub)))
        self.classes = np.array(labels, dtype="int32")
        self.samples = len(self.filenames)
        print("Found %d images belonging to %d classes." % (self.samples, self.num_classes))
        self._filepaths = [os.path.join(self.directory, f) for f in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    @property
    def filepaths(self) -> List[str]:
        return self._filepaths

    @property
    def labels(self) -> np.ndarray:
        return self.classes

    def _get_batches_of_transformed_samples(self, index_array: np.ndarray) -> Any:
        gen = self.image_data_generator
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        for i, j in enumerate(index_array):
            img = load_img(self._filepaths[j], color_mode=self.color_mode, target_size=self.target_size,
                           interpolation=self.interpolation)
            x = img_to_array(img, data_format=self.data_format)
            if hasattr(img, "close"):
                img.close()
            if gen:
                x = gen.standardize(gen.apply_transform(x, gen.get_random_transform(x.shape)))
            batch_x[i] = x
        self._save(batch_x, index_array)
        if self.class_mode == "input":
            return batch_x, batch_x.copy()
        if self.class_mode in ("binary", "sparse"):
            return batch_x, self.classes[index_array].astype(self.dtype)
        if self.class_mode == "categorical":
            batch_y = np.zeros((len(batch_x), self.num_classes), dtype=self.dtype)
            batch_y[np.arange(len(batch_x)), self.classes[index_array]] = 1.0
            return batch_x, batch_y
        return batch_x


def _two(value: Any, name: str) -> List[float]:
    if np.isscalar(value):
        return [1 - value, 1 + value]
    if len(value) == 2:
        return [value[0], value[1]]
    raise ValueError(f"`{name}` should be a float or a tuple or list of two floats. Received: {value}")


class ImageDataGenerator:
    """Batches of images, randomly augmented (rotation, shifts, shear, zoom, flips, channel and
    brightness shifts) and standardized (rescale, sample- or feature-wise centering and std
    normalization, ZCA whitening; fit() computes the feature-wise statistics)."""

    def __init__(self, featurewise_center: bool = False, samplewise_center: bool = False,
                 featurewise_std_normalization: bool = False, samplewise_std_normalization: bool = False,
                 zca_whitening: bool = False, zca_epsilon: float = 1e-6, rotation_range: float = 0,
                 width_shift_range: Any = 0.0, height_shift_range: Any = 0.0, brightness_range: Any = None,
                 shear_range: float = 0.0, zoom_range: Any = 0.0, channel_shift_range: float = 0.0,
                 fill_mode: str = "nearest", cval: float = 0.0, horizontal_flip: bool = False,
                 vertical_flip: bool = False, rescale: Any = None, preprocessing_function: Any = None,
                 data_format: Optional[str] = None, validation_split: float = 0.0, interpolation_order: int = 1,
                 dtype: Any = None):
        self.featurewise_center, self.samplewise_center = featurewise_center, samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening, self.zca_epsilon = zca_whitening, zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range, self.height_shift_range = width_shift_range, height_shift_range
        self.shear_range, self.channel_shift_range = shear_range, channel_shift_range
        self.fill_mode, self.cval = fill_mode, cval
        self.horizontal_flip, self.vertical_flip = horizontal_flip, vertical_flip
        self.rescale, self.preprocessing_function = rescale, preprocessing_function
        self.interpolation_order = interpolation_order
        self.dtype = dtype or K.floatx()
        data_format = data_format or K.image_data_format()
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError('`data_format` should be `"channels_last"` (channel after row and column) or '
                             f'`"channels_first"` (channel before row and column). Received: {data_format}')
        self.data_format = data_format
        if data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(f"`validation_split` must be strictly between 0 and 1.  Received: {validation_split}")
        self._validation_split = validation_split
        self.mean: Any = None
        self.std: Any = None
        self.principal_components: Any = None
        self.zoom_range = _two(zoom_range, "zoom_range")
        if zca_whitening:
            if not featurewise_center:
                self.featurewise_center = True
                warnings.warn("This ImageDataGenerator specifies `zca_whitening`, which overrides setting of "
                              "`featurewise_center`.")
            if featurewise_std_normalization:
                self.featurewise_std_normalization = False
                warnings.warn("This ImageDataGenerator specifies `zca_whitening` which overrides setting of"
                              "`featurewise_std_normalization`.")
        if featurewise_std_normalization and not featurewise_center:
            self.featurewise_center = True
            warnings.warn("This ImageDataGenerator specifies `featurewise_std_normalization`, which overrides "
                          "setting of `featurewise_center`.")
        if samplewise_std_normalization and not samplewise_center:
            self.samplewise_center = True
            warnings.warn("This ImageDataGenerator specifies `samplewise_std_normalization`, which overrides "
                          "setting of `samplewise_center`.")
        if brightness_range is not None and (not isinstance(brightness_range, (tuple, list, np.ndarray))
                                             or len(brightness_range) != 2):
            raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}")
        self.brightness_range = brightness_range

    # -- iterators ---------------------------------------------------------------------------
    def flow(self, x: Any, y: Any = None, batch_size: int = 32, shuffle: bool = True, sample_weight: Any = None,
             seed: Optional[int] = None, save_to_dir: Optional[str] = None, save_prefix: str = "",
             save_format: str = "png", subset: Optional[str] = None) -> NumpyArrayIterator:
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle, sample_weight=sample_weight,
                                  seed=seed, data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format, subset=subset, dtype=self.dtype)

    def flow_from_directory(self, directory: str, target_size: _Seq[int] = (256, 256), color_mode: str = "rgb",
                            classes: Optional[List[str]] = None, class_mode: Optional[str] = "categorical",
                            batch_size: int = 32, shuffle: bool = True, seed: Optional[int] = None,
                            save_to_dir: Optional[str] = None, save_prefix: str = "", save_format: str = "png",
                            follow_links: bool = False, subset: Optional[str] = None,
                            interpolation: str = "nearest") -> DirectoryIterator:
        return DirectoryIterator(directory, self, target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, dtype=self.dtype)

    # -- per image ---------------------------------------------------------------------------
    def standardize(self, x: np.ndarray) -> np.ndarray:
        """preprocessing_function, rescale, then the sample- and feature-wise normalizations
        and ZCA whitening (in place where x is a float array, as Keras)."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        unfit = ("This ImageDataGenerator specifies `{}`, but it hasn't been fit on any training data. Fit it first "
                 "by calling `.fit(numpy_data)`.")
        if self.featurewise_center:
            if self.mean is not None:
                x -= self.mean
            else:
                warnings.warn(unfit.format("featurewise_center"))
        if self.featurewise_std_normalization:
            if self.std is not None:
                x /= self.std + 1e-6
            else:
                warnings.warn(unfit.format("featurewise_std_normalization"))
        if self.zca_whitening:
            if self.principal_components is not None:
                flat = np.reshape(x, (-1, int(np.prod(x.shape[-3:]))))
                x = np.reshape(flat @ self.principal_components, x.shape)
            else:
                warnings.warn(unfit.format("zca_whitening"))
        return x

    def get_random_transform(self, img_shape: _Seq[int], seed: Optional[int] = None) -> Dict[str, Any]:
        """The random parameters of one image's transform, drawn from np.random in Keras's order."""
        rows, cols = img_shape[self.row_axis - 1], img_shape[self.col_axis - 1]
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) if self.rotation_range else 0

        def shift(rng: Any, size: int) -> float:
            if not rng:
                return 0
            try:  # a list or int range: one of its values, either sign
                t = np.random.choice(rng)
                t *= np.random.choice([-1, 1])
            except ValueError:  # a float range
                t = np.random.uniform(-rng, rng)
            if np.max(rng) < 1:  # a fraction of the size
                t *= size
            return t
        tx = shift(self.height_shift_range, rows)
        ty = shift(self.width_shift_range, cols)
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_h = (np.random.random() < 0.5) * self.horizontal_flip
        flip_v = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift = None
        if self.channel_shift_range != 0:
            channel_shift = np.random.uniform(-self.channel_shift_range, self.channel_shift_range)
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy, "flip_horizontal": flip_h,
                "flip_vertical": flip_v, "channel_shift_intensity": channel_shift, "brightness": brightness}

    def apply_transform(self, x: np.ndarray, transform_parameters: Dict[str, Any]) -> np.ndarray:
        """One image (3-D, without the batch axis) transformed by the given parameters."""
        p = transform_parameters
        row, col, chan = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0), p.get("shear", 0),
                                   p.get("zx", 1), p.get("zy", 1), row_axis=row, col_axis=col, channel_axis=chan,
                                   fill_mode=self.fill_mode, cval=self.cval, order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], chan)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, col)
        if p.get("flip_vertical", False):
            x = flip_axis(x, row)
        if p.get("brightness") is not None:
            x = apply_brightness_shift(x, p["brightness"])
        return x

    def random_transform(self, x: np.ndarray, seed: Optional[int] = None) -> np.ndarray:
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x: Any, augment: bool = False, rounds: int = 1, seed: Optional[int] = None) -> None:
        """The feature-wise statistics of sample images x (rank 4; augmented `rounds` times
        first when augment): per-channel mean and std, and the ZCA matrix
        U diag(1 / sqrt(S + zca_epsilon)) U^T of the covariance U S U^T (TF 1.15's)."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}")
        ax = self.channel_axis
        if x.shape[ax] not in (1, 3, 4):
            warnings.warn(f'Expected input to be images (as Numpy array) following the data format convention '
                          f'"{self.data_format}" (channels on axis {ax}), i.e. expected either 1, 3 or 4 channels on '
                          f"axis {ax}. However, it was passed an array with shape {x.shape} ({x.shape[ax]} "
                          "channels).")
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if augment:
            out = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    out[i + r * x.shape[0]] = self.random_transform(x[i])
            x = out
        shape = [1, 1, 1]
        shape[ax - 1] = x.shape[ax]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=(0, self.row_axis, self.col_axis)), shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=(0, self.row_axis, self.col_axis)), shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            flat = np.reshape(x, (x.shape[0], -1))
            sigma = flat.T @ flat / flat.shape[0]
            u, s, _ = np.linalg.svd(sigma)
            self.principal_components = (u * (1.0 / np.sqrt(s[None] + self.zca_epsilon))) @ u.T
