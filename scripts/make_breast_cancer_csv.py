"""Write deepsharp/data/breast_cancer.csv from the Wisconsin diagnostic breast cancer data set that
scikit-learn ships (569 tumours, 30 measurements, label 1 = malignant).

Run once with scikit-learn installed: `python scripts/make_breast_cancer_csv.py`. The CSV is
committed; deepsharp never imports scikit-learn.
"""

from pathlib import Path

from sklearn.datasets import load_breast_cancer

data = load_breast_cancer()
names = [n.replace(" ", "_") for n in data.feature_names]
malignant = (data.target == 0).astype(int)  # scikit-learn codes malignant as 0
out = Path(__file__).resolve().parents[1] / "deepsharp" / "data" / "breast_cancer.csv"
with out.open("w") as f:
    f.write(",".join(names + ["malignant"]) + "\n")
    for row, label in zip(data.data, malignant):
        f.write(",".join(f"{v:.6g}" for v in row) + f",{label}\n")
print(f"wrote {out} ({len(malignant)} rows, {int(malignant.sum())} malignant)")
