// Previous/Next over cursor pages, with a page-size choice: the server pages, the UI keeps
// the cursors it walked.

import { Button, Select, Space, Typography } from 'antd';

export function Pager({
  page,
  next,
  onPrevious,
  onNext,
  limit,
  onLimit,
  noun,
}: {
  page: number;
  next: string | null | undefined;
  onPrevious: () => void;
  onNext: (cursor: string) => void;
  limit: number;
  onLimit: (n: number) => void;
  noun: string;
}) {
  return (
    <Space style={{ marginTop: 12 }} wrap>
      <Button disabled={page <= 1} onClick={onPrevious}>
        Previous page
      </Button>
      <Button disabled={!next} onClick={() => next && onNext(next)}>
        Next page
      </Button>
      <Typography.Text type="secondary">Page {page}</Typography.Text>
      <Select
        aria-label={`${noun} per page`}
        value={limit}
        onChange={onLimit}
        options={[25, 50, 100, 200].map((n) => ({ value: n, label: `${n} per page` }))}
        style={{ width: 140 }}
      />
    </Space>
  );
}
