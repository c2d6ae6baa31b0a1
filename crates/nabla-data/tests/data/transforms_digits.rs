//! Transforms and the embedded digits data set.

use nabla_core::{DType, Generator};
use nabla_cpu::CpuBackend;
use nabla_data::transforms::{
    Compose, Normalize, RandomCrop, RandomHorizontalFlip, Transform, Transformed,
};
use nabla_data::{DataLoader, Dataset, Digits, TensorDataset};
use nabla_tensor::Tensor;

fn image(c: usize, h: usize, w: usize) -> Tensor<CpuBackend> {
    let v: Vec<f32> = (0..c * h * w).map(|i| i as f32).collect();
    Tensor::from_vec(v, [c, h, w], &CpuBackend::new()).unwrap()
}

#[test]
fn normalize_per_channel() {
    let n = Normalize::new(vec![1.0, 2.0], vec![2.0, 0.5]).unwrap();
    let x = image(2, 1, 2); // channel 0: 0 1, channel 1: 2 3
    let y = n.apply(&x, &mut Generator::new(0)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![-0.5, 0.0, 0.0, 2.0]);
    assert_eq!(y.dtype(), DType::F32);
    // Batched input [N, C, H, W] works too; wrong channel counts and ranks are errors.
    let batch = Tensor::stack(&[&x, &x], 0).unwrap();
    assert_eq!(
        n.apply(&batch, &mut Generator::new(0)).unwrap().shape(),
        &[2, 2, 1, 2]
    );
    let e = n
        .apply(&image(3, 1, 1), &mut Generator::new(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 channels"), "{e}");
    assert!(
        n.apply(
            &image(1, 1, 2).reshape([2]).unwrap(),
            &mut Generator::new(0)
        )
        .is_err()
    );
    assert!(Normalize::new(vec![0.0], vec![0.0]).is_err());
    assert!(Normalize::new(vec![0.0, 1.0], vec![1.0]).is_err());
}

#[test]
fn random_crop_windows() {
    let x = image(1, 4, 4);
    let crop = RandomCrop::new((2, 3), 0);
    let mut g = Generator::new(5);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let y = crop.apply(&x, &mut g).unwrap();
        assert_eq!(y.shape(), &[1, 2, 3]);
        let v = y.to_vec::<f32>().unwrap();
        // A window of the 4x4 ramp: rows are consecutive, columns too.
        let (top, left) = ((v[0] as usize) / 4, (v[0] as usize) % 4);
        let want: Vec<f32> = (0..2)
            .flat_map(|r| (0..3).map(move |c| ((top + r) * 4 + left + c) as f32))
            .collect();
        assert_eq!(v, want);
        seen.insert((top, left));
    }
    assert_eq!(seen.len(), 3 * 2, "every window position is drawn");
    // Padding: a same-size crop of a padded image can include fill values.
    let padded = RandomCrop::new((4, 4), 2).fill(-1.0);
    let mut g = Generator::new(1);
    let mut saw_fill = false;
    for _ in 0..20 {
        let y = padded.apply(&x, &mut g).unwrap();
        assert_eq!(y.shape(), &[1, 4, 4]);
        saw_fill |= y.to_vec::<f32>().unwrap().contains(&-1.0);
    }
    assert!(saw_fill);
    // Same generator state, same crop.
    let a = padded
        .apply(&x, &mut Generator::new(9))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let b = padded
        .apply(&x, &mut Generator::new(9))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(a, b);
    let e = RandomCrop::new((9, 9), 2)
        .apply(&x, &mut g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("(9, 9)") && e.contains("8x8"), "{e}");
}

#[test]
fn horizontal_flip_probability() {
    let x = image(1, 1, 3);
    let always = RandomHorizontalFlip::new(1.0).unwrap();
    let never = RandomHorizontalFlip::new(0.0).unwrap();
    let mut g = Generator::new(0);
    assert_eq!(
        always.apply(&x, &mut g).unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 1.0, 0.0]
    );
    assert_eq!(
        never.apply(&x, &mut g).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0]
    );
    let half = RandomHorizontalFlip::new(0.5).unwrap();
    let flips = (0..1000)
        .filter(|_| half.apply(&x, &mut g).unwrap().to_vec::<f32>().unwrap()[0] == 2.0)
        .count();
    assert!((430..570).contains(&flips), "{flips} flips of 1000");
    assert!(RandomHorizontalFlip::new(1.5).is_err());
}

#[test]
fn compose_and_transformed_dataset() {
    let cpu = CpuBackend::new();
    let images = Tensor::arange(0.0, 64.0, 1.0, DType::F32, &cpu)
        .unwrap()
        .reshape([4, 1, 4, 4])
        .unwrap();
    let labels = Tensor::from_vec(vec![0i64, 1, 2, 3], [4], &cpu).unwrap();
    let ds = TensorDataset::new(vec![images, labels]).unwrap();
    let t = Compose::new(vec![
        Box::new(RandomCrop::new((4, 4), 1)),
        Box::new(RandomHorizontalFlip::new(0.5).unwrap()),
        Box::new(Normalize::new(vec![10.0], vec![2.0]).unwrap()),
    ]);
    let aug = Transformed::new(ds, t, 7);
    let first = aug.get(2).unwrap();
    assert_eq!(first[0].shape(), &[1, 4, 4]);
    assert_eq!(first[1].item::<i64>().unwrap(), 2, "labels pass through");
    assert_eq!(
        first[0].to_vec::<f32>().unwrap(),
        aug.get(2).unwrap()[0].to_vec::<f32>().unwrap()
    );
    // Through a loader: workers give the same augmented batches as inline, and epochs differ.
    let epochs = |workers: usize| {
        let images = Tensor::arange(0.0, 64.0, 1.0, DType::F32, &cpu)
            .unwrap()
            .reshape([4, 1, 4, 4])
            .unwrap();
        let labels = Tensor::from_vec(vec![0i64, 1, 2, 3], [4], &cpu).unwrap();
        let ds = TensorDataset::new(vec![images, labels]).unwrap();
        let aug = Transformed::new(ds, RandomCrop::new((4, 4), 2), 7);
        let mut loader = DataLoader::new(aug, 4).unwrap().num_workers(workers);
        (0..3)
            .map(|_| {
                loader.iter().next().unwrap().unwrap()[0]
                    .to_vec::<f32>()
                    .unwrap()
            })
            .collect::<Vec<_>>()
    };
    let inline = epochs(0);
    assert_eq!(inline, epochs(2));
    assert_ne!(inline[0], inline[1]);
}

#[test]
fn digits_embedded() {
    let cpu = CpuBackend::new();
    let d = Digits::load(&cpu).unwrap();
    assert_eq!(d.images.shape(), &[1797, 1, 8, 8]);
    assert_eq!(d.images.dtype(), DType::F32);
    assert_eq!(d.labels.dtype(), DType::I64);
    let px = d.images.to_vec::<f32>().unwrap();
    assert!(px.iter().all(|&p| (0.0..=1.0).contains(&p)));
    assert_eq!(px.iter().cloned().fold(0.0f32, f32::max), 1.0);
    // First row of sklearn's digits: 0,0,5,13,9,1,0,0,... label 0.
    assert_eq!(&px[..4], &[0.0, 0.0, 5.0 / 16.0, 13.0 / 16.0]);
    let labels = d.labels.to_vec::<i64>().unwrap();
    let mut counts = [0usize; 10];
    for &l in &labels {
        counts[usize::try_from(l).unwrap()] += 1;
    }
    assert_eq!(counts.iter().sum::<usize>(), 1797);
    // sklearn: np.bincount(load_digits().target)
    assert_eq!(counts, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]);
    assert_eq!(labels[..3], [0, 1, 2]);

    let (train, test) = d.train_test_split(0.25, 42).unwrap();
    assert_eq!((train.len(), test.len()), (1347, 450));
    let (train2, _) = d.train_test_split(0.25, 42).unwrap();
    assert_eq!(
        train.tensors()[1].to_vec::<i64>().unwrap(),
        train2.tensors()[1].to_vec::<i64>().unwrap()
    );
    let (train3, _) = d.train_test_split(0.25, 43).unwrap();
    assert_ne!(
        train.tensors()[1].to_vec::<i64>().unwrap(),
        train3.tensors()[1].to_vec::<i64>().unwrap()
    );
    assert!(d.train_test_split(1.0, 0).is_err());
    assert_eq!(d.dataset().unwrap().len(), 1797);
}
